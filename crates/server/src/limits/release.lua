-- Bridle conversation limit: release one lease, or every lease of one conversation.
--
-- KEYS[1]  sorted set: lease id -> expiry (ms, Redis clock)
-- KEYS[2]  hash: lease id -> conversation
-- ARGV[1]  'lease' or 'conversation'
-- ARGV[2]  the lease id or the conversation
--
-- Returns how many leases were removed (0 is not an error: already released or expired).

local leases, owners = KEYS[1], KEYS[2]
local what, id = ARGV[1], ARGV[2]

if what == 'lease' then
  local removed = redis.call('ZREM', leases, id)
  redis.call('HDEL', owners, id)
  return removed
end

if what ~= 'conversation' then
  return redis.error_reply('release: unknown mode ' .. tostring(what))
end

local removed = 0
local all = redis.call('HGETALL', owners)
for i = 1, #all, 2 do
  if all[i + 1] == id then
    removed = removed + redis.call('ZREM', leases, all[i])
    redis.call('HDEL', owners, all[i])
  end
end
return removed
