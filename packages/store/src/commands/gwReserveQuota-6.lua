-- A request's hold on its key's and its user's quota and in-flight slots (quota-holds.ts).
-- KEYS: token record, user record, token holds (set), token held sum, user holds, user held sum.
-- ARGV: member ("<id>:<amount>"), amount, ttl ms, key in-flight cap, user in-flight cap (0: none),
-- mode ("check": decide only; "reserve": decide and hold).
-- Returns {'OK'}, {'GONE'}, {'KEY_IN_FLIGHT'|'USER_IN_FLIGHT', cap},
-- or {'KEY_QUOTA'|'USER_QUOTA', 'exhausted'|'held'}.
--- @include "now"
--- @include "holds"
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then return {'GONE'} end
sweep(KEYS[3], KEYS[4], now)
sweep(KEYS[5], KEYS[6], now)
local keyCap, userCap = tonumber(ARGV[4]), tonumber(ARGV[5])
if keyCap > 0 and redis.call('ZCARD', KEYS[3]) >= keyCap then return {'KEY_IN_FLIGHT', keyCap} end
if userCap > 0 and redis.call('ZCARD', KEYS[5]) >= userCap then return {'USER_IN_FLIGHT', userCap} end
if redis.call('HGET', KEYS[1], 'unlimited_quota') ~= '1' then
  local remain = tonumber(redis.call('HGET', KEYS[1], 'remain_quota') or '0') or 0
  if remain <= 0 then return {'KEY_QUOTA', 'exhausted'} end
  if remain - (tonumber(redis.call('GET', KEYS[4]) or '0') or 0) <= 0 then return {'KEY_QUOTA', 'held'} end
end
local allowance = tonumber(redis.call('HGET', KEYS[2], 'quota') or '0') or 0
if allowance > 0 then
  local left = allowance - (tonumber(redis.call('HGET', KEYS[2], 'used_quota') or '0') or 0)
  if left <= 0 then return {'USER_QUOTA', 'exhausted'} end
  if left - (tonumber(redis.call('GET', KEYS[6]) or '0') or 0) <= 0 then return {'USER_QUOTA', 'held'} end
end
if ARGV[6] ~= 'reserve' then return {'OK'} end
local ttl = tonumber(ARGV[3])
local amount = tonumber(ARGV[2])
for i = 3, 5, 2 do
  redis.call('ZADD', KEYS[i], now + ttl, ARGV[1])
  redis.call('INCRBY', KEYS[i + 1], amount)
  -- The sets outlive their longest hold, and no longer: a deleted key leaves nothing behind.
  for j = i, i + 1 do
    if redis.call('PTTL', KEYS[j]) < ttl then redis.call('PEXPIRE', KEYS[j], ttl + 1000) end
  end
end
return {'OK'}
