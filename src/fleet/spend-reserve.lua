-- `reserve(K, A)`: one booking of a call's worst case in every scope it counts against (spend-ledger.ts reserve),
-- run by spend-batch.lua over its slice of KEYS (K) and ARGV (A). For n scopes:
-- K[4i+1..4i+4] scope i's state, res, amt and exp keys (spend-common.lua); K[4n+1] the fleet's pause key, if any.
-- A[1] now in ms ('' for the server's clock), A[2] the ticket id, A[3] its worst case in micro-USD, A[4] in tokens,
-- A[5] the reservation's TTL in ms, A[6] n; per scope i, A[7+3i] its TTL in ms, A[8+3i] its configured USD cap
-- and A[9+3i] its token cap ('' none); then a ticket of the same scopes to settle first ('' none) with its actual
-- micro-USD and tokens, '1' when K[4n+1] is the pause key, '1' for a call already made.
-- The tighter of the stored cap and the configured one; '' for none.
local function cap_of(stored, configured)
  if stored and configured ~= '' then
    if tonumber(configured) < tonumber(stored) then return configured end
    return stored
  end
  if stored then return stored end
  return configured
end

-- One booking over the keys K and arguments A (KEYS and ARGV of a lone booking; a slice of them in a batch).
local function reserve(K, A)
  local now = now_ms(A[1])
  local ticket, usd, tok = A[2], A[3], A[4]
  local ttl, n = tonumber(A[5]), tonumber(A[6])
  -- After the scopes' triplets: a ticket of the same scopes to settle first ('' for none) with its actuals,
  -- '1' when K[4n + 1] is the fleet's pause key: while it lives, nothing is booked, and '1' for a call already
  -- made: it is booked whatever the pause and the caps, which are only reported.
  local extra = 7 + 3 * n
  local in_flight = A[extra + 4] == '1'
  local settled = {}
  if A[extra] ~= '' then
    for i = 0, n - 1 do settled[i + 1] = settle_in(K, i, A[extra], A[extra + 1], A[extra + 2]) end
  end
  -- This very booking ran before (its reply was lost, and the client sent the script again on a new connection):
  -- the same booking, not a new one, nor one refused for the room it holds itself. Live, or expired since.
  -- Whether a cap applies is not looked up again: yes, so the caller waits for its next booking.
  local held = redis.call('ZSCORE', K[2], ticket)
  if held or redis.call('HEXISTS', K[4], ticket) == 1 then return {1, tonumber(held) or now, settled, 1, 0} end
  local paused_ms = 0
  if A[extra + 3] == '1' then
    local paused = redis.call('PTTL', K[4 * n + 1])
    if paused > 0 then
      if not in_flight then
        for j = 0, n - 1 do touch(K, 4 * j, A[7 + 3 * j]) end
        return {2, paused, settled}
      end
      paused_ms = paused
    end
  end
  for i = 0, n - 1 do
    sweep(K[4 * i + 1], K[4 * i + 2], K[4 * i + 3], K[4 * i + 4], now)
  end
  local capped = 0
  for i = 0, n - 1 do
    local f = redis.call('HMGET', K[4 * i + 1], 'used_usd', 'used_tok', 'res_usd', 'res_tok', 'cap_usd', 'cap_tok')
    local cap_usd = cap_of(f[5], A[8 + 3 * i])
    local cap_tok = cap_of(f[6], A[9 + 3 * i])
    if cap_usd ~= '' or cap_tok ~= '' then capped = 1 end
    local used_usd, used_tok, res_usd, res_tok = f[1] or '0', f[2] or '0', f[3] or '0', f[4] or '0'
    -- A figure HINCRBY would refuse fails the booking here, before any scope is written: not half-booked.
    for j = 1, 4 do
      if f[j] and not string.match(f[j], '^%-?%d+$') then return redis.error_reply('ERR spend figure not an integer') end
    end
    local refusal
    if cap_usd ~= '' and tonumber(used_usd) + tonumber(res_usd) + tonumber(usd) > tonumber(cap_usd) then
      refusal = {0, 'cost_budget', i + 1, used_usd, res_usd, cap_usd}
    elseif cap_tok ~= '' and tonumber(used_tok) + tonumber(res_tok) + tonumber(tok) > tonumber(cap_tok) then
      refusal = {0, 'token_budget', i + 1, used_tok, res_tok, cap_tok}
    end
    if refusal and not in_flight then
      for j = 0, n - 1 do touch(K, 4 * j, A[7 + 3 * j]) end
      refusal[7] = settled
      return refusal
    end
  end
  for i = 0, n - 1 do
    if redis.call('HEXISTS', K[4 * i + 3], ticket) == 1 then return redis.error_reply('ERR duplicate spend ticket') end
  end
  local expires = now + ttl
  for i = 0, n - 1 do
    local st, rs, am = K[4 * i + 1], K[4 * i + 2], K[4 * i + 3]
    add(st, 'res_usd', usd)
    add(st, 'res_tok', tok)
    redis.call('ZADD', rs, expires, ticket)
    redis.call('HSET', am, ticket, usd .. ':' .. tok)
    touch(K, 4 * i, A[7 + 3 * i])
  end
  return {1, expires, settled, capped, paused_ms}
end
