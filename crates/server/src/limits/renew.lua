-- Bridle conversation limit: extend a live lease by its TTL (the lease's keep-alive).
--
-- KEYS[1]  sorted set: lease id -> expiry (ms, Redis clock)
-- KEYS[2]  hash: lease id -> conversation
-- ARGV[1]  lease id
-- ARGV[2]  lease TTL, ms
--
-- Returns 1 when renewed, 0 when the lease is gone (released, or expired and collected).
-- A lease past its expiry that no acquire has collected yet is renewed: no one was admitted
-- in its place, because every acquire collects expired leases first.

local leases, owners = KEYS[1], KEYS[2]
local lease, ttl = ARGV[1], tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if not redis.call('ZSCORE', leases, lease) or redis.call('HEXISTS', owners, lease) == 0 then
  return 0
end
redis.call('ZADD', leases, 'XX', now + ttl, lease)
local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', leases, last[2])
redis.call('PEXPIREAT', owners, last[2])
return 1
