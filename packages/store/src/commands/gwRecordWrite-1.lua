-- One record and its indexes written atomically (record-write.ts). KEYS: a key in the store's
-- slot. ARGV: the RecordWrite as JSON. Returns {'OK', id}, {'NOT_FOUND'}, {'STALE', field} or
-- {'CONFLICT', field} or {'LIMIT'}.
local op = cjson.decode(ARGV[1])
-- KEYS[1] only routes the script to the store's slot; every key it touches is in that slot.
-- `once` names the job this write belongs to: a job that already wrote (and was run again after
-- its worker died) gets the id it wrote, and nothing is written twice.
if op.once then
  local done = redis.call('GET', op.once.key)
  if done then return {'OK', done} end
end
local id = op.id
local key
if op.create then
  for _, u in ipairs(op.unique or {}) do
    if redis.call('HEXISTS', u.key, u.field) == 1 then return {'CONFLICT', u.field} end
  end
  if op.limit and redis.call('SCARD', op.limit.key) >= op.limit.max then return {'LIMIT'} end
  -- `above`: ids that still own rows elsewhere (PostgreSQL), which the sequence must never hand out again.
  if op.create.above and (tonumber(redis.call('GET', op.create.seq)) or 0) < op.create.above then
    redis.call('SET', op.create.seq, op.create.above)
  end
  id = tostring(redis.call('INCR', op.create.seq))
  key = op.create.prefix .. id
else
  key = op.key
  if redis.call('EXISTS', key) == 0 then return {'NOT_FOUND'} end
  if op.expect then
    for f, v in pairs(op.expect) do
      local current = redis.call('HGET', key, f)
      if not current then current = '' end
      if current ~= v then return {'STALE', f} end
    end
  end
  for _, u in ipairs(op.unique or {}) do
    local owner = redis.call('HGET', u.key, u.field)
    if owner and owner ~= id then return {'CONFLICT', u.field} end
  end
end
if op.delete then
  redis.call('DEL', key)
else
  local args = {}
  if op.set then
    for f, v in pairs(op.set) do
      args[#args + 1] = f
      args[#args + 1] = v
    end
  end
  if op.create then
    args[#args + 1] = 'id'
    args[#args + 1] = id
  end
  if #args > 0 then redis.call('HSET', key, unpack(args)) end
end
for _, x in ipairs(op.index or {}) do
  local v = x.value
  if v == '$id' then v = id end
  if x.op == 'hset' then redis.call('HSET', x.key, x.field, v)
  elseif x.op == 'hdel' then
    if redis.call('HGET', x.key, x.field) == id then redis.call('HDEL', x.key, x.field) end
  elseif x.op == 'sadd' then redis.call('SADD', x.key, v)
  elseif x.op == 'srem' then redis.call('SREM', x.key, v)
  elseif x.op == 'zadd' then redis.call('ZADD', x.key, tonumber(id), id)
  elseif x.op == 'zrem' then redis.call('ZREM', x.key, id)
  end
end
if op.once then redis.call('SET', op.once.key, id, 'PX', op.once.ttlMs) end
return {'OK', id}
