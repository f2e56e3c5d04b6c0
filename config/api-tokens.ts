// Named API tokens: `API_TOKENS=ops:…,billing:…` beside `API_TOKEN` (named `api`). A name says who called, so a
// decision on an approval is recorded under the name of the token that made it (docs/http-api.md#tokens). No
// message here ever shows a token: a malformed item is named by its position, never by its text.
import { z } from 'zod';
import { ConfigError } from '../src/kernel/errors.js';

export interface ApiToken {
  /** Who holds it, as recorded in `decidedBy`: letters, digits and `_.-`, at most 64. */
  name: string;
  token: string;
}

export const API_TOKEN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const MIN_API_TOKEN_CHARS = 16;
/** The name of `API_TOKEN`'s token. */
export const DEFAULT_TOKEN_NAME = 'api';

/** API_TOKENS: `name:token` items separated by commas; the token is everything after the first colon. */
export const apiTokensSchema = z.string().transform((value, ctx): ApiToken[] => {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  const tokens: ApiToken[] = [];
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  for (const [i, item] of items.entries()) {
    const at = item.indexOf(':');
    const name = item.slice(0, at).trim();
    const token = item.slice(at + 1).trim();
    if (at < 0) return refuse(`item ${i + 1} must be name:token`);
    if (!API_TOKEN_NAME.test(name))
      return refuse(`item ${i + 1}: the name must be 1 to 64 letters, digits and _.- (name:token)`);
    if (token.length < MIN_API_TOKEN_CHARS)
      return refuse(`the token of "${name}" must be at least ${MIN_API_TOKEN_CHARS} characters`);
    if (tokens.some((other) => other.name === name)) return refuse(`the name "${name}" is given twice`);
    const twin = tokens.find((other) => other.token === token);
    if (twin) return refuse(`"${twin.name}" and "${name}" have the same token`);
    tokens.push({ name, token });
  }
  return tokens.length > 0 ? tokens : refuse('must hold at least one name:token');
});

/**
 * Every token the API accepts: API_TOKEN as `api`, then API_TOKENS. A name or a token given by both is refused,
 * naming API_TOKENS: one credential under two names would make "who decided" ambiguous.
 */
export function apiTokensOf(config: {
  API_TOKEN?: string | undefined;
  API_TOKENS?: ApiToken[] | undefined;
}): ApiToken[] {
  const named = config.API_TOKENS ?? [];
  if (!config.API_TOKEN) return [...named];
  const fallback = { name: DEFAULT_TOKEN_NAME, token: config.API_TOKEN };
  for (const other of named) {
    if (other.name === fallback.name)
      throw new ConfigError('bad_env', `API_TOKENS=(hidden) is invalid: the name "api" is API_TOKEN's`);
    if (other.token === fallback.token)
      throw new ConfigError(
        'bad_env',
        `API_TOKENS=(hidden) is invalid: "${other.name}" has API_TOKEN's token`,
      );
  }
  return [fallback, ...named];
}
