-- One settle over the keys K and arguments A (KEYS and ARGV of a lone settle; a slice of them in a batch). After
-- the scopes' TTLs, '1' when a ticket the ledger does not hold is recorded as spent all the same (a call made
-- while its booking failed: see settleOrRecord).
local function settle(K, A)
  local ticket, usd, tok, n = A[1], A[2], A[3], tonumber(A[4])
  local record = A[5 + n] == '1'
  local out = {}
  for i = 0, n - 1 do
    out[i + 1] = settle_in(K, i, ticket, usd, tok)
    if out[i + 1] == 'none' and record then
      add(K[4 * i + 1], 'used_usd', usd)
      add(K[4 * i + 1], 'used_tok', tok)
      out[i + 1] = 'recorded'
    end
    touch(K, 4 * i, A[5 + i])
  end
  return out
end
