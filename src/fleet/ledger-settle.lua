-- After the scopes' TTLs, '1' when a ticket the ledger does not hold is recorded as spent all the same (a call
-- made while its booking failed: see settleOrRecord).
local ticket, usd, tok, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local record = ARGV[5 + n] == '1'
local out = {}
for i = 0, n - 1 do
  out[i + 1] = settle_in(i, ticket, usd, tok)
  if out[i + 1] == 'none' and record then
    add(KEYS[4 * i + 1], 'used_usd', usd)
    add(KEYS[4 * i + 1], 'used_tok', tok)
    out[i + 1] = 'recorded'
  end
  touch(4 * i, ARGV[5 + i])
end
return out
