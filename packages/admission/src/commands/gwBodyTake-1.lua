-- KEYS: the user's body bytes, a hash of holder (a gateway or batch worker process) to
-- "<bytes>:<until ms>". ARGV: the holder, what it holds now, what it would hold, the limit, the
-- time to live of a field (ms), now (ms), '1' to take whatever the limit.
-- A holder that died stops renewing its field, and its bytes stop counting at its `until`.
-- Returns -1 when taken, else what every holder holds (refused).
local now = tonumber(ARGV[6])
local others = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then
    local held, untilMs = string.match(all[i + 1], '^(%d+):(%d+)$')
    if tonumber(untilMs or '0') < now then
      redis.call('HDEL', KEYS[1], all[i])
    else
      others = others + tonumber(held)
    end
  end
end
local before, after = tonumber(ARGV[2]), tonumber(ARGV[3])
-- As the gateway's own budgets: a user holding nothing may always send one body.
if ARGV[7] ~= '1' and others + before > 0 and others + after > tonumber(ARGV[4]) then
  return others + before
end
redis.call('HSET', KEYS[1], ARGV[1], after .. ':' .. (now + tonumber(ARGV[5])))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return -1
