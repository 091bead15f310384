-- A request's hold on its key's and its user's quota, budgets and in-flight slots (quota-holds.ts).
-- KEYS: token record, user record, then for the token and for the user: holds (set), held sum
-- (tokens), held cost (nano-dollars).
-- ARGV: member ("<id>.<nano-dollars>:<tokens>"), tokens, ttl ms, key in-flight cap, user
-- in-flight cap (0: none), mode ("check": decide only; "reserve": decide and hold), nano-dollars.
-- Returns {'OK'}, {'GONE'}, {'KEY_IN_FLIGHT'|'USER_IN_FLIGHT', cap},
-- {'KEY_QUOTA'|'USER_QUOTA', 'exhausted'|'held'},
-- or {'KEY_BUDGET'|'USER_BUDGET', 'exhausted'|'held', max_budget, budget_duration}.
--- @include "now"
--- @include "holds"
--- @include "budget"
-- Each record read once: its id (gone without), its quota's fields, and its budget's.
local token = redis.call('HMGET', KEYS[1], 'id', 'unlimited_quota', 'remain_quota', 'max_budget', 'budget_duration', 'budget_period', 'budget_spend')
local user = redis.call('HMGET', KEYS[2], 'id', 'quota', 'used_quota', 'max_budget', 'budget_duration', 'budget_period', 'budget_spend')
if not token[1] or not user[1] then return {'GONE'} end
sweep(KEYS[3], KEYS[4], KEYS[5], now)
sweep(KEYS[6], KEYS[7], KEYS[8], now)
local keyCap, userCap = tonumber(ARGV[4]), tonumber(ARGV[5])
if keyCap > 0 and redis.call('ZCARD', KEYS[3]) >= keyCap then return {'KEY_IN_FLIGHT', keyCap} end
if userCap > 0 and redis.call('ZCARD', KEYS[6]) >= userCap then return {'USER_IN_FLIGHT', userCap} end
if token[2] ~= '1' then
  local remain = tonumber(token[3]) or 0
  if remain <= 0 then return {'KEY_QUOTA', 'exhausted'} end
  if remain - (tonumber(redis.call('GET', KEYS[4])) or 0) <= 0 then return {'KEY_QUOTA', 'held'} end
end
local allowance = tonumber(user[2]) or 0
if allowance > 0 then
  local left = allowance - (tonumber(user[3]) or 0)
  if left <= 0 then return {'USER_QUOTA', 'exhausted'} end
  if left - (tonumber(redis.call('GET', KEYS[7])) or 0) <= 0 then return {'USER_QUOTA', 'held'} end
end
-- A budget admits a request while something of it is left after what is spent and held, as
-- quota does: spend passes the budget by at most the worst case of the last request admitted.
for i, record in ipairs({token, user}) do
  local left = budgetLeft(record[4], record[5], record[6], record[7])
  if left ~= nil then
    local held = tonumber(redis.call('GET', KEYS[2 + 3 * i])) or 0
    if left <= 0 or left - held <= 0 then
      return {i == 1 and 'KEY_BUDGET' or 'USER_BUDGET', left <= 0 and 'exhausted' or 'held', record[4], record[5] or 'none'}
    end
  end
end
if ARGV[6] ~= 'reserve' then return {'OK'} end
local ttl = tonumber(ARGV[3])
local amount = tonumber(ARGV[2])
local cost = tonumber(ARGV[7]) or 0
for i = 3, 6, 3 do
  redis.call('ZADD', KEYS[i], now + ttl, ARGV[1])
  redis.call('INCRBY', KEYS[i + 1], amount)
  local last = i + 1
  if cost > 0 then
    redis.call('INCRBY', KEYS[i + 2], cost)
    last = i + 2
  end
  -- The keys outlive their longest hold, and no longer: a deleted key leaves nothing behind.
  for j = i, last do
    if redis.call('PTTL', KEYS[j]) < ttl then redis.call('PEXPIRE', KEYS[j], ttl + 1000) end
  end
end
return {'OK'}
