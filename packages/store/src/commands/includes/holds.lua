-- Quota holds (quota-holds.ts): a sorted set of "<id>.<nano-dollars>:<tokens>" scored by expiry,
-- the sum of their tokens, and the sum of their nano-dollars (held on a budget). The tokens come
-- last, as in the earlier form "<id>:<tokens>" (which holds no money), so that a process of either
-- version reads the other's holds' tokens alike during a rolling upgrade.
local function amountOf(member)
  return tonumber(string.match(member, ':(%d+)$')) or 0
end

local function costOfHold(member)
  return tonumber(string.match(member, '^[^:.]*%.(%d+):')) or 0
end

local function takeOff(sum, costSum, member)
  redis.call('DECRBY', sum, amountOf(member))
  local cost = costOfHold(member)
  -- A cost sum that ran out before its set (its last money hold's expiry passed) is not made negative.
  if cost > 0 and redis.call('EXISTS', costSum) == 1 then redis.call('DECRBY', costSum, cost) end
end

-- Drops the holds of a set that ran out (their request's process died before giving them back),
-- taking each amount off the set's sums. A few at a time.
local function sweep(set, sum, costSum, now)
  local expired = redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, 64)
  for _, member in ipairs(expired) do
    redis.call('ZREM', set, member)
    takeOff(sum, costSum, member)
  end
end

-- Gives one hold back: 1 when it was still held (a hold given back twice counts once).
local function giveBack(set, sum, costSum, member)
  if redis.call('ZREM', set, member) == 0 then return 0 end
  takeOff(sum, costSum, member)
  return 1
end

-- A set with no hold left goes, with its sums: a deleted key or user leaves nothing behind.
local function dropIfEmpty(set, sum, costSum)
  if redis.call('ZCARD', set) == 0 then redis.call('DEL', set, sum, costSum) end
end
