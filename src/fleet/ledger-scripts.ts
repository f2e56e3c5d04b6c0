// The spend ledger's Lua scripts (ledger-*.lua), each with the shared definitions of ledger-common.lua first.
import { LuaScript } from './lua-script.js';

const COMMON = new URL('./ledger-common.lua', import.meta.url);
const RESERVE_FN = new URL('./ledger-reserve.lua', import.meta.url);
const SETTLE_FN = new URL('./ledger-settle.lua', import.meta.url);

/**
 * Bookings and settles of one turn of the event loop, in the order they were asked for (ledger-batch.ts); the
 * only script of bookings and settles, even for one operation: a server cannot know one of them and not another.
 */
export const BATCH = LuaScript.fromFiles(
  COMMON,
  RESERVE_FN,
  SETTLE_FN,
  new URL('./ledger-batch.lua', import.meta.url),
);
/** One scope's figures, its expired reservations swept first. */
export const READ = LuaScript.fromFiles(COMMON, new URL('./ledger-read.lua', import.meta.url));
