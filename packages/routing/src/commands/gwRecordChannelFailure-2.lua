-- KEYS: health hash, channel hash. ARGV: auth(1/0), failures before cooldown, cooldown ms,
-- auth failures before disable, now ms, reason, health ttl ms.
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local auth = 0
if ARGV[1] == '1' then
  auth = redis.call('HINCRBY', KEYS[1], 'auth_failures', 1)
else
  redis.call('HDEL', KEYS[1], 'auth_failures')
end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if auth >= tonumber(ARGV[4]) then
  redis.call('HDEL', KEYS[1], 'auth_failures')
  if redis.call('HGET', KEYS[2], 'status') == '1' then
    redis.call('HSET', KEYS[2], 'status', '3', 'status_reason', ARGV[6])
    return {'disabled', '0'}
  end
end
if failures >= tonumber(ARGV[2]) then
  local untilMs = tonumber(ARGV[5]) + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'failures', '0', 'cooldown_until', tostring(untilMs))
  return {'cooldown', tostring(untilMs)}
end
return {'none', '0'}
