-- `settle(K, A)`: a ticket's actual spend in every scope it was booked in (spend-ledger.ts settleTicket), run by
-- spend-batch.lua over its slice of KEYS (K) and ARGV (A). For n scopes: K[4i+1..4i+4] scope i's state, res, amt
-- and exp keys (spend-common.lua). A[1] the ticket id, A[2] its actual micro-USD, A[3] its actual tokens, A[4] n,
-- A[5..4+n] each scope's TTL in ms, A[5+n] '1' to record it as spent when the ledger does not hold it.
-- One settle over the keys K and arguments A (KEYS and ARGV of a lone settle; a slice of them in a batch). After
-- the scopes' TTLs, '1' when a ticket the ledger does not hold is recorded as spent all the same (a call made
-- while its booking failed: see settleOrRecord).
local function settle(K, A)
  local ticket, usd, tok, n = A[1], A[2], A[3], tonumber(A[4])
  local record = A[5 + n] == '1'
  local out = {}
  for i = 0, n - 1 do
    -- Recording is not idempotent by itself: what this settle did stays in the scope's exp hash, so the same
    -- settle sent again (its reply lost with the connection, the client sends it again) answers the same and
    -- counts once.
    local done = 'recorded:' .. ticket
    local again = record and redis.call('HGET', K[4 * i + 4], done)
    if again then
      out[i + 1] = again
    else
      out[i + 1] = settle_in(K, i, ticket, usd, tok)
      if out[i + 1] == 'none' and record then
        add(K[4 * i + 1], 'used_usd', usd)
        add(K[4 * i + 1], 'used_tok', tok)
        out[i + 1] = 'recorded'
      end
      if record then redis.call('HSET', K[4 * i + 4], done, out[i + 1]) end
    end
    touch(K, 4 * i, A[5 + i])
  end
  return out
end
