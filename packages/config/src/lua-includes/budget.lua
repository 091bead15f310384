-- Budgets in money (budget-period.ts): a record's `max_budget` (nano-dollars, 0: none) over its
-- `budget_duration` (none, daily, weekly, monthly: UTC calendar periods), its spend in the
-- current period in `budget_spend`, counted from `budget_period` (the period's start, epoch s),
-- and its spend since ever in `spend`. Periods come from Redis's clock, so every process agrees.
local function periodStartOf(duration, seconds)
  local days = math.floor(seconds / 86400)
  if duration == 'daily' then return days * 86400 end
  -- 1970-01-01 was a Thursday: a week starts on Monday.
  if duration == 'weekly' then return (days - (days + 3) % 7) * 86400 end
  if duration == 'monthly' then
    -- The day of the month, from days since the epoch (Howard Hinnant's civil_from_days).
    local z = days + 719468
    local doe = z - math.floor(z / 146097) * 146097
    local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
    local mp = math.floor((5 * doy + 2) / 153)
    return (days - (doy - math.floor((153 * mp + 2) / 5))) * 86400
  end
  return 0
end

local budgetSeconds = tonumber(redis.call('TIME')[1])

-- What is left of a budget, from the record's max_budget, budget_duration, budget_period and
-- budget_spend as HMGET read them; nil when it has none.
local function budgetLeft(max, duration, period, spend)
  max = tonumber(max) or 0
  if max <= 0 then return nil end
  if (tonumber(period) or -1) ~= periodStartOf(duration, budgetSeconds) then return max end
  return max - (tonumber(spend) or 0)
end

-- Adds `cost` to the record's spend, counting its period's afresh when a new period began. A
-- count at the most a 64-bit integer holds stays there (pcall: the script goes on).
local function addSpend(record, cost)
  if cost <= 0 then return end
  local fields = redis.call('HMGET', record, 'budget_duration', 'budget_period')
  local start = periodStartOf(fields[1], budgetSeconds)
  if (tonumber(fields[2]) or -1) ~= start then
    redis.call('HSET', record, 'budget_period', start, 'budget_spend', cost)
  else
    redis.pcall('HINCRBY', record, 'budget_spend', cost)
  end
  redis.pcall('HINCRBY', record, 'spend', cost)
end
