-- KEYS: user. ARGV: quota, requests.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'used_quota', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'request_count', ARGV[2])
return 1
