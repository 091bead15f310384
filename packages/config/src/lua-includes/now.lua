-- Time comes from Redis (TIME), so processes on machines with skewed clocks agree on expiry.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
