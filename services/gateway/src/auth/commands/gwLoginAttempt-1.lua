-- KEYS: the client address's failed sign-ins, a hash: '#' their total, and one field per name
-- tried from it (a digest of the name). ARGV: the name's field, the failures an address may
-- have, the failures one name may have from it, the window in ms.
-- An address already refused is refused again without a write, so an attacker past the limit
-- grows nothing: the hash holds at most ARGV[2] + 1 fields, whatever the names.
-- Returns {0, the name's failures from here before this one} when counted, or {1 (the address)
-- or 2 (the name from this address), ms left in the window} when refused.
local total = tonumber(redis.call('HGET', KEYS[1], '#') or '0')
if total >= tonumber(ARGV[2]) then return {1, redis.call('PTTL', KEYS[1])} end
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if mine >= tonumber(ARGV[3]) then return {2, redis.call('PTTL', KEYS[1])} end
redis.call('HINCRBY', KEYS[1], '#', 1)
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {0, mine}
