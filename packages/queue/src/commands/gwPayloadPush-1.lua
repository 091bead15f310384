-- A slice of a large job payload, pushed onto its list (payload-beside.ts), written to this
-- Redis's memory only: not to its AOF, nor to replicas. A 10 MB payload written through the AOF
-- held Redis's thread for tens of milliseconds at a time (its write and fsync), every other
-- tenant's commands behind it; a payload lost with a restart or a failover is told to its client
-- as a 503 to send again. The first slice sets the list's time to live.
-- KEYS: the payload's list. ARGV: the slice, the time to live in ms.
redis.set_repl(redis.REPL_NONE)
local slices = redis.call('RPUSH', KEYS[1], ARGV[1])
if slices == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return slices
