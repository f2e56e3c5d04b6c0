-- A scope's figures (spend-ledger.ts), expired reservations swept first. KEYS[1..4] the scope's state, res, amt and
-- exp keys (spend-common.lua). ARGV[1] now in ms ('' for the server's clock), ARGV[2] the scope's TTL in ms.
-- Returns {used usd, used tokens, reserved usd, reserved tokens, cap usd or '', cap tokens or '', live tickets}.
if sweep(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now_ms(ARGV[1])) > 0 then touch(KEYS, 0, ARGV[2]) end
local f = redis.call('HMGET', KEYS[1], 'used_usd', 'used_tok', 'res_usd', 'res_tok', 'cap_usd', 'cap_tok')
return {f[1] or '0', f[2] or '0', f[3] or '0', f[4] or '0', f[5] or '', f[6] or '', redis.call('ZCARD', KEYS[2])}
