-- Gives holds back (quota-holds.ts); a hold given back twice counts once.
-- KEYS: token holds (set), token held sum, user holds, user held sum. ARGV: the members.
--- @include "holds"
for _, member in ipairs(ARGV) do
  giveBack(KEYS[1], KEYS[2], member)
  giveBack(KEYS[3], KEYS[4], member)
end
dropIfEmpty(KEYS[1], KEYS[2])
dropIfEmpty(KEYS[3], KEYS[4])
return 1
