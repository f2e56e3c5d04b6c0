// API_TOKENS (`name:token,…`) and API_TOKEN (`api`): parsed, refused naming the variable with its value hidden,
// never a token in a message; and the bearer check's match, which names the token that matched.
import { describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { apiTokensOf } from '../../../config/api-tokens.js';
import { matchToken } from '../../../producers/bearer-auth.js';
import { ConfigError } from '../../../src/kernel/errors.js';

const OPS = 'ops-0123456789abcdef';
const BILLING = 'billing-0123456789abcdef';

function refusal(value: string): string {
  try {
    parseEnv({ API_TOKENS: value });
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error(`API_TOKENS=${value} was accepted`);
}

describe('API_TOKENS', () => {
  it('is unset by default', () => {
    expect(parseEnv({}).API_TOKENS).toBeUndefined();
  });

  it('reads name:token items; the token is everything after the first colon; blanks around are dropped', () => {
    expect(parseEnv({ API_TOKENS: ` ops:${OPS} , billing.eu-1:${BILLING}:x ,` }).API_TOKENS).toEqual([
      { name: 'ops', token: OPS },
      { name: 'billing.eu-1', token: `${BILLING}:x` },
    ]);
  });

  it.each([
    ['no colon', `${OPS}`, 'item 1 must be name:token'],
    ['an empty name', `:${OPS}`, 'item 1: the name must be 1 to 64 letters, digits and _.- (name:token)'],
    ['a name with a space', `ops:${OPS},bad name:${BILLING}`, 'item 2: the name must be'],
    ['a name of 65 characters', `${'n'.repeat(65)}:${OPS}`, 'item 1: the name must be'],
    ['a short token', `ops:${OPS},billing:short`, 'the token of "billing" must be at least 16 characters'],
    ['a name given twice', `ops:${OPS},ops:${BILLING}`, 'the name "ops" is given twice'],
    ['one token under two names', `ops:${OPS},billing:${OPS}`, '"ops" and "billing" have the same token'],
    ['nothing but commas', ',,', 'must hold at least one name:token'],
  ])('refuses %s, naming API_TOKENS and hiding its value', (_label, value, message) => {
    const text = refusal(value);
    expect(text).toMatch(/^API_TOKENS=\(hidden\) is invalid: /);
    expect(text).toContain(message);
    expect(text).not.toContain(OPS);
    expect(text).not.toContain(BILLING);
    expect(text).not.toContain('short');
  });
});

describe('apiTokensOf', () => {
  it('names API_TOKEN `api` and puts it first', () => {
    expect(apiTokensOf({ API_TOKEN: OPS })).toEqual([{ name: 'api', token: OPS }]);
    expect(apiTokensOf({ API_TOKEN: OPS, API_TOKENS: [{ name: 'billing', token: BILLING }] })).toEqual([
      { name: 'api', token: OPS },
      { name: 'billing', token: BILLING },
    ]);
    expect(apiTokensOf({})).toEqual([]);
  });

  it('refuses the name `api` or API_TOKEN’s token in API_TOKENS, naming API_TOKENS and no token', () => {
    for (const named of [[{ name: 'api', token: BILLING }], [{ name: 'billing', token: OPS }]]) {
      let message = '';
      try {
        apiTokensOf({ API_TOKEN: OPS, API_TOKENS: named });
      } catch (error) {
        message = (error as ConfigError).message;
      }
      expect(message).toMatch(/^API_TOKENS=\(hidden\) is invalid: /);
      expect(message).not.toContain(OPS);
      expect(message).not.toContain(BILLING);
    }
  });
});

describe('matchToken', () => {
  const tokens = [
    { name: 'ops', token: OPS },
    { name: 'billing', token: BILLING },
  ];

  it('answers the name of the token given, and nothing for any other', () => {
    expect(matchToken(OPS, tokens)).toBe('ops');
    expect(matchToken(BILLING, tokens)).toBe('billing');
    for (const wrong of ['', OPS.slice(0, -1), `${OPS}x`, OPS.toUpperCase(), 'ops'])
      expect(matchToken(wrong, tokens)).toBeUndefined();
  });
});
