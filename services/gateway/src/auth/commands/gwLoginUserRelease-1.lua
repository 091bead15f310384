-- KEYS: a user's failed sign-ins across addresses. Takes one back, unless the window has ended
-- meanwhile: a DECR then would leave a key without expiry.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('DECR', KEYS[1])
