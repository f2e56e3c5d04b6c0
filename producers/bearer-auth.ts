// The API's bearer check over named tokens (config/api-tokens.ts). The token given is compared with every token,
// each in constant time, whichever matches, so neither the timing nor the position of a match tells anything.
// The matched token's name goes on res.locals: who called, as a decision records it. Tokens are never logged.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { ApiToken } from '../config/api-tokens.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
export function safeEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** The name of the token that matched, or undefined; every token is compared. */
export function matchToken(given: string, tokens: readonly ApiToken[]): string | undefined {
  let matched: string | undefined;
  for (const { name, token } of tokens) {
    const equal = safeEqual(given, token);
    matched ??= equal ? name : undefined;
  }
  return matched;
}

const CALLER = 'caller';

export function bearerAuth(tokens: readonly ApiToken[]): RequestHandler {
  if (tokens.length === 0) throw new Error('bearerAuth needs at least one token');
  return (req, res, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(req.get('authorization') ?? '');
    // Always compare, even without a header, so a missing token costs the same as a wrong one.
    const name = matchToken(match?.[1] ?? '', tokens);
    if (name !== undefined && match !== null) {
      res.locals[CALLER] = name;
      return next();
    }
    res.set('WWW-Authenticate', 'Bearer realm="agent-fleet"').status(401).json({ error: 'unauthorized' });
  };
}

/** The name of the token the request was authenticated with; throws behind a route bearerAuth did not guard. */
export function callerOf(res: Response): string {
  const name: unknown = res.locals[CALLER];
  if (typeof name !== 'string') throw new Error('callerOf: the route is not behind bearerAuth');
  return name;
}
