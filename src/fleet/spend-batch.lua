-- Several operations of the ledger in one script, one after the other, as if each had been sent alone in that
-- order (spend-batch.ts gathers those of one turn of the event loop). ARGV: the number of operations, then per
-- operation its kind ('r' a booking, 's' a settle), how many keys and arguments it has, and its arguments; its
-- keys follow those of the operations before it in KEYS. Each operation's reply comes back in order; one that
-- fails comes back as {'err', message} and the others still run, as they would have alone.
local ops = {r = reserve, s = settle}
local out = {}
local k, a = 0, 1
for i = 1, tonumber(ARGV[1]) do
  local op, nkeys, nargs = ops[ARGV[a + 1]], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local K, A = {}, {}
  for j = 1, nkeys do K[j] = KEYS[k + j] end
  for j = 1, nargs do A[j] = ARGV[a + 3 + j] end
  k, a = k + nkeys, a + 3 + nargs
  local ok, reply = pcall(op, K, A)
  if not ok then
    -- Redis 7 raises a table with the error in `err`; older servers raise the message.
    out[i] = {'err', type(reply) == 'table' and reply.err or tostring(reply)}
  elseif type(reply) == 'table' and reply.err then
    out[i] = {'err', reply.err}
  else
    out[i] = reply
  end
end
return out
