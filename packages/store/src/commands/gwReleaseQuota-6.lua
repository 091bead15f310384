-- Gives holds back (quota-holds.ts); a hold given back twice counts once.
-- KEYS: token holds (set), token held sum, token held cost, user holds, user held sum, user held cost.
-- ARGV: the members.
--- @include "holds"
for _, member in ipairs(ARGV) do
  giveBack(KEYS[1], KEYS[2], KEYS[3], member)
  giveBack(KEYS[4], KEYS[5], KEYS[6], member)
end
dropIfEmpty(KEYS[1], KEYS[2], KEYS[3])
dropIfEmpty(KEYS[4], KEYS[5], KEYS[6])
return 1
