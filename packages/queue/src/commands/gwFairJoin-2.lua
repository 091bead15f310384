-- A job takes its place in its tenant's line (fair-shares.ts). KEYS: the queue's line counts, the
-- user's per-key counts. ARGV: class ("i" interactive, "b" batch), key id, the most rank, the
-- most virtual time, the most jobs a user alone may have on the wait list.
-- Its rank: the class's virtual time (the highest rank taken from the queue since it last ran
-- empty) plus its place in a round robin of its user's keys less one: the sum over the user's
-- keys of min(that key's waiting jobs, this key's). A tenant with nothing waiting ranks with the
-- jobs being taken now, ahead of every backlog. Lower ranks are served first.
-- Under a backlog that never empties the virtual time stops at its most, and ranks are then
-- the tenants' places alone: still a round robin, never all equal.
-- Returns {rank, on the wait list (1) or by priority (0), place}. An interactive job goes on BullMQ's
-- wait list (served first, first come first served, and cheaper) when its tenant has nothing
-- else waiting, or when its user is the only one waiting and fewer than the most are listed:
-- a newcomer then waits behind those few at most.
local mine = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
local waiting = redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':n', 1)
-- Counts of a process that died between join and leave would stay: the hashes run out an hour
-- after they were last renewed (when a count starts, and one join in 32), never while in use.
if mine == 1 or waiting % 32 == 1 then redis.call('PEXPIRE', KEYS[2], 3600000) end
if waiting % 32 == 1 then redis.call('PEXPIRE', KEYS[1], 3600000) end
local place, users = 0, 0
for _, count in ipairs(redis.call('HVALS', KEYS[2])) do
  place = place + math.min(tonumber(count), mine)
  users = users + tonumber(count)
end
local virtual = math.min(tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':v') or '0'), tonumber(ARGV[4]))
local listed = 0
if ARGV[1] == 'i' then
  if place == 1 or (users == waiting and tonumber(redis.call('HGET', KEYS[1], 'i:w') or '0') < tonumber(ARGV[5])) then
    listed = 1
    redis.call('HINCRBY', KEYS[1], 'i:w', 1)
  end
end
return {math.min(virtual + place - 1, tonumber(ARGV[3])), listed, place}
