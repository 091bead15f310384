-- KEYS: channel, channel health. ARGV: quota, response time ms, healthy (1/0).
if ARGV[3] ~= '0' then redis.call('DEL', KEYS[2]) end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'used_quota', ARGV[1])
redis.call('HSET', KEYS[1], 'response_time', ARGV[2])
return 1
