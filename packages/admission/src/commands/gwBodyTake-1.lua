-- KEYS: the user's body bytes, a hash of holder (a gateway or batch worker process) to its bytes,
-- and of "<holder>:t" to the time (ms) its bytes count until unless it renews them.
-- ARGV: the holder, the bytes, the limit, the time to live (ms), now (ms), '1' to take whatever the limit.
-- A holder that died stops renewing, and its bytes stop counting at its time.
-- Returns -1 when taken, else what every holder holds (refused).
local holder, now = ARGV[1], tonumber(ARGV[5])
local all = redis.call('HGETALL', KEYS[1])
local untils = {}
for i = 1, #all, 2 do
  if string.sub(all[i], -2) == ':t' then untils[string.sub(all[i], 1, -3)] = tonumber(all[i + 1]) end
end
local held = 0
for i = 1, #all, 2 do
  local field = all[i]
  if string.sub(field, -2) ~= ':t' then
    if field ~= holder and (untils[field] or 0) < now then
      redis.call('HDEL', KEYS[1], field, field .. ':t')
    else
      held = held + tonumber(all[i + 1])
    end
  end
end
local bytes = tonumber(ARGV[2])
-- As the gateway's own budgets: a user holding nothing may always send one body.
if ARGV[6] ~= '1' and held > 0 and held + bytes > tonumber(ARGV[3]) then return held end
redis.call('HINCRBY', KEYS[1], holder, bytes)
redis.call('HSET', KEYS[1], holder .. ':t', now + tonumber(ARGV[4]))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return -1
