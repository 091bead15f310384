-- KEYS: the user's body bytes, a hash of holder (a gateway or batch worker process) to the bytes
-- it leases, and of "<holder>:t" to the time (ms) they count until unless it renews them.
-- ARGV: the holder, the bytes it uses now, the bytes it asks for beyond them, the most it would
-- lease beyond those (a slice), the limit, the time to live (ms), now (ms), '1' to take whatever
-- the limit.
-- A holder that died stops renewing, and its lease stops counting at its time.
-- Returns {1, the holder's new lease} when taken, else {0, what every holder holds} (refused).
local holder, now = ARGV[1], tonumber(ARGV[7])
local all = redis.call('HGETALL', KEYS[1])
local untils = {}
for i = 1, #all, 2 do
  if string.sub(all[i], -2) == ':t' then untils[string.sub(all[i], 1, -3)] = tonumber(all[i + 1]) end
end
local others = 0
for i = 1, #all, 2 do
  local field = all[i]
  if string.sub(field, -2) ~= ':t' and field ~= holder then
    if (untils[field] or 0) < now then
      redis.call('HDEL', KEYS[1], field, field .. ':t')
    else
      others = others + tonumber(all[i + 1])
    end
  end
end
local used, bytes, slice, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local held = others + used
local force = ARGV[8] == '1'
-- As the gateway's own budgets: a user holding nothing may always send one body.
if not force and held > 0 and held + bytes > limit then return {0, held} end
-- Beyond what it needs, a quarter of the room left at most: near the limit, leases are what is used.
local room = limit - held - bytes
local spare = 0
if not force and room > 0 then spare = math.min(slice, math.floor(room / 4)) end
local lease = used + bytes + spare
redis.call('HSET', KEYS[1], holder, lease, holder .. ':t', now + tonumber(ARGV[6]))
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return {1, lease}
