// Named API tokens: `API_TOKENS=ops:…,billing:…` beside `API_TOKEN` (named `api`). A name says who called, so a
// decision on an approval is recorded under the name of the token that made it (docs/http-api.md#tokens). No
// message here ever shows a token: a malformed item is named by its position, never by its text.
import { ConfigError } from '../src/kernel/errors.js';
import { namedSecretsSchema } from './named-secrets.js';

export interface ApiToken {
  /** Who holds it, as recorded in `decidedBy`: letters, digits and `_.-`, at most 64. */
  name: string;
  token: string;
}

export const MIN_API_TOKEN_CHARS = 16;
/** The name of `API_TOKEN`'s token. */
export const DEFAULT_TOKEN_NAME = 'api';

/** API_TOKENS: `name:token` items separated by commas; the token is everything after the first colon. */
export const apiTokensSchema = namedSecretsSchema('token', MIN_API_TOKEN_CHARS, true).transform((items) =>
  items.map(({ name, secret }): ApiToken => ({ name, token: secret })),
);

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
