-- Gives holds back (quota-holds.ts); a hold given back twice counts once.
-- KEYS: token holds (set), token held sum, user holds, user held sum. ARGV: the members.
for _, member in ipairs(ARGV) do
  local amount = tonumber(string.match(member, ':(%d+)$')) or 0
  for i = 1, 3, 2 do
    if redis.call('ZREM', KEYS[i], member) == 1 then redis.call('DECRBY', KEYS[i + 1], amount) end
  end
end
for i = 1, 3, 2 do
  if redis.call('ZCARD', KEYS[i]) == 0 then redis.call('DEL', KEYS[i], KEYS[i + 1]) end
end
return 1
