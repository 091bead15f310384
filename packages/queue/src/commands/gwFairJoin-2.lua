-- A job takes its place in its tenant's line (fair-shares.ts). KEYS: the queue's line counts, the
-- user's per-key counts. ARGV: class ("i" interactive, "b" batch), key id, the most rank, the
-- most virtual time.
-- Its rank: the class's virtual time (the highest rank taken from the queue since it last ran
-- empty) plus its place in a round robin of its user's keys less one: the sum over the user's
-- keys of min(that key's waiting jobs, this key's). A tenant with nothing waiting ranks with the
-- jobs being taken now, ahead of every backlog. Lower ranks are served first.
-- Returns {rank, place}. Under a backlog that never empties the virtual time stops at its most, and ranks are then
-- the tenants' places alone: still a round robin, never all equal.
local mine = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
local waiting = redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':n', 1)
-- Counts of a process that died between join and leave would stay: the hashes run out an hour
-- after they were last renewed (when a count starts, and one join in 32), never while in use.
if mine == 1 or waiting % 32 == 1 then redis.call('PEXPIRE', KEYS[2], 3600000) end
if waiting % 32 == 1 then redis.call('PEXPIRE', KEYS[1], 3600000) end
local place = 0
for _, count in ipairs(redis.call('HVALS', KEYS[2])) do
  place = place + math.min(tonumber(count), mine)
end
local virtual = math.min(tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':v') or '0'), tonumber(ARGV[4]))
return {math.min(virtual + place - 1, tonumber(ARGV[3])), place}
