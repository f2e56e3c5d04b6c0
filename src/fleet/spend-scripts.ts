// The spend ledger's Lua scripts (spend-*.lua), each with the shared definitions of spend-common.lua first.
import { LuaScript } from './lua-script.js';

const COMMON = new URL('./spend-common.lua', import.meta.url);
const RESERVE_FN = new URL('./spend-reserve.lua', import.meta.url);
const SETTLE_FN = new URL('./spend-settle.lua', import.meta.url);

/**
 * Bookings and settles of one turn of the event loop, in the order they were asked for (spend-batch.ts); the
 * only script of bookings and settles, even for one operation: a server cannot know one of them and not another.
 */
export const BATCH = LuaScript.fromFiles(
  COMMON,
  RESERVE_FN,
  SETTLE_FN,
  new URL('./spend-batch.lua', import.meta.url),
);
/** One scope's figures, its expired reservations swept first. */
export const READ = LuaScript.fromFiles(COMMON, new URL('./spend-read.lua', import.meta.url));
