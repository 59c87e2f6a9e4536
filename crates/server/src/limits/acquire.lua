-- Bridle conversation limit: take a lease on one of a user's conversation slots.
-- Runs atomically: Redis executes no other command while a script runs.
--
-- KEYS[1]  sorted set: lease id -> expiry (ms, Redis clock)
-- KEYS[2]  hash: lease id -> conversation
-- ARGV[1]  conversation
-- ARGV[2]  lease id (unique per lease)
-- ARGV[3]  limit: conversations active at once
-- ARGV[4]  lease TTL, ms
--
-- A conversation is active while at least one unexpired lease names it; leases on a
-- conversation that is already active take no further slot.
--
-- Returns {1, active} when the lease is taken, {0, active} when the limit rejects it,
-- where active counts the user's active conversations afterwards.

local leases, owners = KEYS[1], KEYS[2]
local conversation, lease = ARGV[1], ARGV[2]
local limit, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Forget leases that were not renewed in time (their instance crashed or lost Redis).
local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
for _, id in ipairs(expired) do
  redis.call('HDEL', owners, id)
end
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
end

-- Count the active conversations.
local seen = {}
local active = 0
for _, id in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
  local owner = redis.call('HGET', owners, id)
  if owner and not seen[owner] then
    seen[owner] = true
    active = active + 1
  end
end

local held = seen[conversation] == true
if not held and active >= limit then
  return {0, active}
end

redis.call('ZADD', leases, now + ttl, lease)
redis.call('HSET', owners, lease, conversation)
-- Both keys live exactly as long as their longest lease.
local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', leases, last[2])
redis.call('PEXPIREAT', owners, last[2])
if not held then
  active = active + 1
end
return {1, active}
