// A small seeded PRNG for the fault suite: the same seed gives the same kill moments and the same failed
// requests, so a failing run can be replayed with FAULT_SEED=<seed>.
import { createHash } from 'node:crypto';

export interface SeededRandom {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

/** mulberry32: tiny, fast and good enough to spread a handful of faults. */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

/**
 * A float in [0, 1) fixed by the seed and a key: the same request of the same job gets the same draw whichever
 * worker sends it and in whatever order the requests of a batch arrive.
 */
export function keyedDraw(seed: number, key: string): number {
  return createHash('sha256').update(`${seed}:${key}`).digest().readUInt32BE(0) / 4_294_967_296;
}

/** The suite's seed: FAULT_SEED when set (a decimal integer), else the scenario's fixed default. */
export function faultSeed(defaultSeed: number): number {
  const raw = process.env['FAULT_SEED'];
  if (raw === undefined || raw.trim() === '') return defaultSeed;
  if (!/^\d+$/.test(raw.trim()))
    throw new Error(`FAULT_SEED=${JSON.stringify(raw)} must be a decimal integer`);
  return Number(raw.trim());
}

/** A duration from the environment in milliseconds (a decimal integer), else the default. */
export function durationFromEnv(name: string, defaultMs: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return defaultMs;
  if (!/^\d+$/.test(raw.trim())) throw new Error(`${name}=${JSON.stringify(raw)} must be milliseconds`);
  return Number(raw.trim());
}
