-- Bridle request limit: a sliding-window log of one user's admitted requests.
-- Runs atomically: Redis executes no other command while a script runs.
--
-- KEYS[1]  list of admission times (ms, Redis clock), oldest first
-- ARGV[1]  limit: requests admitted per window
-- ARGV[2]  window, ms
--
-- Returns {1, remaining, reset_after_ms} when the request is admitted (and logged),
--         {0, 0, retry_after_ms}         when it is rejected (and not logged).
--
-- The clock is the Redis server's, so gateway instances with skewed clocks still agree.
-- Times are 13-digit integers, exact in Lua numbers and in their string form (%.14g).

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Drop the admissions that have left the window (they are at the head).
local log = redis.call('LRANGE', key, 0, -1)
local expired = 0
for i = 1, #log do
  if tonumber(log[i]) + window <= now then
    expired = i
  else
    break
  end
end
if expired > 0 then
  redis.call('LTRIM', key, expired, -1)
end
local counted = #log - expired

if counted < limit then
  redis.call('RPUSH', key, now)
  redis.call('PEXPIRE', key, window)
  local oldest = now
  if counted > 0 then
    oldest = tonumber(log[expired + 1])
  end
  return {1, limit - counted - 1, oldest + window - now}
end

-- One more request fits once all but limit - 1 of the counted admissions have left the
-- window, i.e. when the one at 0-based position counted - limit among them does.
return {0, 0, tonumber(log[expired + counted - limit + 1]) + window - now}
