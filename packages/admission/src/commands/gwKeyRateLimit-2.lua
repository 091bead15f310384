-- KEYS: this minute's count, the previous minute's. ARGV: the limit, the share of the previous
-- minute still inside the last 60 s. Returns 1 (and takes the request back) when over the limit.
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], 120000) end
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local estimate = previous * tonumber(ARGV[2]) + current
if estimate > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return 1
end
return 0
