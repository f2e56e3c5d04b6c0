-- Shared by the spend ledger's scripts (spend-ledger.ts). Per scope, four keys: state (hash: used_usd, used_tok,
-- res_usd, res_tok, cap_usd, cap_tok), res (sorted set: ticket -> expiry ms), amt (hash: ticket ->
-- "<micro-usd>:<tokens>" reserved), exp (hash: expired tickets -> their amounts, until a late settle corrects
-- them). Figures come in as the strings the caller sent, never as Lua numbers, so no formatting can round them.
-- Every function takes the keys of its operation (K) rather than KEYS: a batch (spend-batch.lua) runs several
-- operations, each over its own slice of KEYS. It reads no KEYS or ARGV of its own.
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function add(key, field, amount, negate)
  if amount == '0' then return end
  if negate then amount = '-' .. amount end
  redis.call('HINCRBY', key, field, amount)
end

local function split(amounts)
  return string.match(amounts, '^(%d+):(%d+)$')
end

-- Expired reservations are counted as spent at their worst case, and remembered for a late settle.
local function sweep(st, rs, am, ex, now)
  local expired = redis.call('ZRANGEBYSCORE', rs, '-inf', now)
  if #expired == 0 then return 0 end
  for _, t in ipairs(expired) do
    local a = redis.call('HGET', am, t)
    if a then
      local u, k = split(a)
      add(st, 'used_usd', u)
      add(st, 'used_tok', k)
      add(st, 'res_usd', u, true)
      add(st, 'res_tok', k, true)
      redis.call('HSET', ex, t, a)
      redis.call('HDEL', am, t)
    end
  end
  redis.call('ZREMRANGEBYSCORE', rs, '-inf', now)
  return #expired
end

local function touch(K, base, ttl)
  for j = 1, 4 do redis.call('PEXPIRE', K[base + j], ttl) end
end

-- Takes a ticket's worst case ("<usd>:<tok>") out of the fields that hold it and adds its actual to used.
local function replace_worst(st, usd_field, tok_field, worst, usd, tok)
  local u, k = split(worst)
  add(st, usd_field, u, true)
  add(st, tok_field, k, true)
  add(st, 'used_usd', usd)
  add(st, 'used_tok', tok)
end

-- Settles a ticket in the i-th scope of K: 'settled', 'late' (its reservation had expired) or 'none'.
local function settle_in(K, i, ticket, usd, tok)
  local st, rs, am, ex = K[4 * i + 1], K[4 * i + 2], K[4 * i + 3], K[4 * i + 4]
  local a = redis.call('HGET', am, ticket)
  local e = redis.call('HGET', ex, ticket)
  if a then
    replace_worst(st, 'res_usd', 'res_tok', a, usd, tok)
    redis.call('HDEL', am, ticket)
    redis.call('ZREM', rs, ticket)
    return 'settled'
  elseif e then
    -- An expired reservation was counted as used at its worst case.
    replace_worst(st, 'used_usd', 'used_tok', e, usd, tok)
    redis.call('HDEL', ex, ticket)
    return 'late'
  end
  return 'none'
end
