-- KEYS: the channel's lease set. ARGV: lease id, limit, channel id, notification channel.
-- Announces the free lease only when the channel was full: nobody waits for a channel with room.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('ZCARD', KEYS[1]) + 1 >= tonumber(ARGV[2]) then
  redis.call('PUBLISH', ARGV[4], ARGV[3])
end
return 1
