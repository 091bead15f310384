-- KEYS: health hash, channel hash. ARGV: auth(1/0), failures before cooldown, cooldown ms,
-- auth failures before disable, now ms, reason, health ttl ms, the failing request's user id
-- ('' when unknown).
-- A streak of failures cools the whole channel only when it came from two users or more; from
-- one user alone it cools the channel for that user ('caller-cooldown'): what one tenant's
-- requests bring on (time-outs of the long outputs it asks for, say) never cools a channel for
-- the others.
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if ARGV[8] ~= '' and redis.call('HSETNX', KEYS[1], 'u:' .. ARGV[8], '1') == 1 then
  redis.call('HINCRBY', KEYS[1], 'callers', 1)
end
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
  local callers = tonumber(redis.call('HGET', KEYS[1], 'callers') or '0')
  -- A new streak: its failures and the users in it start again.
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, 2) == 'u:' then redis.call('HDEL', KEYS[1], field) end
  end
  redis.call('HSET', KEYS[1], 'failures', '0', 'callers', '0')
  local untilMs = tonumber(ARGV[5]) + tonumber(ARGV[3])
  if callers >= 2 or ARGV[8] == '' then
    redis.call('HSET', KEYS[1], 'cooldown_until', tostring(untilMs))
    return {'cooldown', tostring(untilMs)}
  end
  return {'caller-cooldown', tostring(untilMs)}
end
return {'none', '0'}
