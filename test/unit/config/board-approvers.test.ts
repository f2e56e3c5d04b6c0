// BOARD_APPROVERS: the run console's approver logins, `name:password,…`. Every refusal names the variable and
// never shows a password, not even one typed where a name goes.
import { describe, expect, it } from 'vitest';
import { parseEnv } from '../../../config/env.js';
import { ConfigError } from '../../../src/kernel/errors.js';

function refusal(value: string): string {
  try {
    parseEnv({ BOARD_APPROVERS: value });
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error(`expected ${value} to be refused`);
}

describe('BOARD_APPROVERS', () => {
  it('reads name:password items, trimmed, a password holding colons whole', () => {
    expect(
      parseEnv({ BOARD_APPROVERS: ' alice:correct-horse-1 , bob.s:pa:ss:word-12345,' }).BOARD_APPROVERS,
    ).toEqual([
      { user: 'alice', password: 'correct-horse-1' },
      { user: 'bob.s', password: 'pa:ss:word-12345' },
    ]);
    expect(parseEnv({}).BOARD_APPROVERS).toBeUndefined();
  });

  it('refuses a bad item by its position, naming the variable and hiding the value', () => {
    const cases: [string, string][] = [
      ['alice-secret-password-1', 'item 1 must be name:password'],
      ['alice:long-enough-pass,alice smith:long-enough-pass', 'item 2: the name must be 1 to 64 letters'],
      ['alice:short', 'the password of "alice" must be at least 12 characters'],
      ['alice:long-enough-pass,alice:other-long-pass', 'the name "alice" is given twice'],
      [':long-enough-pass', 'item 1: the name must be'],
      [' , ', 'must hold at least one name:password'],
    ];
    for (const [value, why] of cases) {
      const message = refusal(value);
      expect(message, value).toMatch(/^BOARD_APPROVERS=\(hidden\) is invalid: /);
      expect(message, value).toContain(why);
      for (const secret of ['secret-password', 'long-enough-pass', 'other-long-pass', 'short'])
        if (!why.includes(secret)) expect(message, value).not.toContain(secret);
    }
  });
});
