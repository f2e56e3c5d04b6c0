// A Lua script run with EVALSHA: the server compiles it once and every later call sends only its SHA1. When the
// server does not know it (first use, a restart, SCRIPT FLUSH), one EVAL sends the source and caches it again.
// Every script is a .lua file next to the module that runs it, read once at start-up (the build copies the
// files into dist/ beside the compiled code).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../queue/redis.js';

export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** The script of these files joined in order (shared definitions first): `new URL('./x.lua', import.meta.url)`. */
  static fromFiles(...files: URL[]): LuaScript {
    return new LuaScript(files.map((file) => readFileSync(file, 'utf8')).join('\n'));
  }

  /** The script of these files (that define functions) ending with `main`, the line that calls one of them. */
  static calling(main: string, ...files: URL[]): LuaScript {
    return new LuaScript([...files.map((file) => readFileSync(file, 'utf8')), main].join('\n'));
  }

  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
