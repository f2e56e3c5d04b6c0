// The recipient check of send_email: a corpus of hostile recipients that must all be refused, legitimate ones
// that must pass unchanged (but for the domain's case), and properties over arbitrary input.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRecipient } from '../../../src/tools/email-address.js';
import { join } from 'node:path';
import { CORPORA_DIR } from '../../support/repo-paths.js';

const ALLOWED = ['example.com', 'example.org'];

function readCorpus(name: string): string[] {
  const text = readFileSync(join(CORPORA_DIR, name), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => (line.startsWith('json:') ? (JSON.parse(line.slice(5)) as string) : line));
}

const hostile = readCorpus('hostile-recipients.txt');

// [as given, as it will be routed]
const legit: Array<[string, string]> = [
  ['a@example.com', 'a@example.com'],
  ['ada@example.org', 'ada@example.org'],
  ['first.last@example.com', 'first.last@example.com'],
  ['first.last+reports@example.com', 'first.last+reports@example.com'],
  ["o'brien@example.com", "o'brien@example.com"],
  ['a_b-c@example.org', 'a_b-c@example.org'],
  ['bounce=x=y@example.com', 'bounce=x=y@example.com'],
  ['1234567890@example.com', '1234567890@example.com'],
  ['Ada.Lovelace@Example.COM', 'Ada.Lovelace@example.com'],
  ['UPPER@EXAMPLE.ORG', 'UPPER@example.org'],
  [`${'a'.repeat(64)}@example.com`, `${'a'.repeat(64)}@example.com`],
];

describe('corpus', () => {
  it('is big enough', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(50);
  });

  it('refuses every hostile recipient, with a reason that says what is allowed', () => {
    const passed = hostile.filter((input) => parseRecipient(input, ALLOWED).ok);
    expect(
      passed,
      `hostile recipients that passed:\n${passed.map((p) => JSON.stringify(p)).join('\n')}`,
    ).toEqual([]);
    for (const input of hostile) {
      const result = parseRecipient(input, ALLOWED);
      if (result.ok) continue;
      expect(result.reason).toContain('example.com, example.org');
    }
  });

  it('accepts every legitimate recipient, lowercasing only the domain', () => {
    for (const [input, routed] of legit) {
      expect(parseRecipient(input, ALLOWED), input).toEqual({ ok: true, address: routed });
    }
  });
});

describe('decisions', () => {
  it('allows the exact domain only, not its subdomains', () => {
    expect(parseRecipient('a@example.com', ['example.com']).ok).toBe(true);
    const sub = parseRecipient('a@mail.example.com', ['example.com']);
    expect(sub).toMatchObject({ ok: false, reason: expect.stringContaining('subdomains') });
  });

  it('compares allowed domains case-insensitively', () => {
    expect(parseRecipient('a@example.com', ['Example.COM'])).toEqual({ ok: true, address: 'a@example.com' });
  });

  it('refuses non-ASCII domains outright rather than comparing punycode', () => {
    expect(parseRecipient('a@exаmple.com', ['exаmple.com'])).toMatchObject({ ok: false });
  });

  it('refuses everything when no domain is allowed, and says why', () => {
    expect(parseRecipient('a@example.com', [])).toMatchObject({
      ok: false,
      reason: expect.stringContaining('EMAIL_ALLOWED_DOMAINS'),
    });
  });

  it('names the specific problem first', () => {
    const reason = (input: string) => {
      const result = parseRecipient(input, ALLOWED);
      return result.ok ? '' : result.reason;
    };
    expect(reason('a@example.com\r\nBcc: x@evil.com')).toMatch(/line break/);
    expect(reason('"Boss" <a@example.com>')).toMatch(/one recipient|display name/);
    expect(reason('Boss<a@example.com>')).toMatch(/display name/);
    expect(reason('a@example.com,b@example.com')).toMatch(/one recipient/);
    expect(reason('a%evil.com@example.com')).toMatch(/% and !/);
    expect(reason('a@[1.2.3.4]')).toMatch(/IP-address literals/);
    expect(reason('a@evil.com')).toMatch(/evil\.com is not allowed/);
  });
});

describe('properties', () => {
  // Any UTF-16 code unit, lone surrogates included.
  const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
  const nearAddress = fc
    .tuple(
      fc.string({ unit: fc.constantFrom(...'aZ0.+-_\'=%!@:,;<>"()[]\\ \r\n\t\u0000é') }),
      fc.constantFrom(...ALLOWED),
    )
    .map(([local, domain]) => `${local}@${domain}`);
  const domains = fc.array(fc.oneof(fc.constantFrom(...ALLOWED), anyText), { maxLength: 4 });

  it('never throws, and whatever it accepts is one plain address at an allowed domain', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, nearAddress), domains, (input, allowed) => {
        const result = parseRecipient(input, allowed);
        if (!result.ok) {
          expect(result.reason.length).toBeGreaterThan(10);
          return;
        }
        const parts = result.address.split('@');
        expect(parts).toHaveLength(2);
        expect(allowed.map((domain) => domain.toLowerCase())).toContain(parts[1]);
        expect(result.address).toMatch(/^[A-Za-z0-9._+'=-]{1,64}@[a-z0-9.-]+$/);
        expect(result.address.length).toBeLessThanOrEqual(254);
        // What is accepted is accepted again unchanged: the routed form is a fixed point.
        expect(parseRecipient(result.address, allowed)).toEqual(result);
      }),
      { numRuns: 2000 },
    );
  });

  const atom = fc.string({
    unit: fc.constantFrom(..."abcxyzABCXYZ0189_+-'="),
    minLength: 1,
    maxLength: 10,
  });
  const validAddress = fc
    .tuple(fc.array(atom, { minLength: 1, maxLength: 3 }), fc.constantFrom(...ALLOWED), fc.boolean())
    .map(([atoms, domain, upper]) => `${atoms.join('.')}@${upper ? domain.toUpperCase() : domain}`);

  it('accepts well-formed addresses at an allowed domain', () => {
    fc.assert(
      fc.property(validAddress, (input) => {
        const at = input.indexOf('@');
        expect(parseRecipient(input, ALLOWED)).toEqual({
          ok: true,
          address: `${input.slice(0, at)}@${input.slice(at + 1).toLowerCase()}`,
        });
      }),
    );
  });

  it('refuses a well-formed address once any routing, quoting or control character is put anywhere in it', () => {
    const hostileChar = fc.constantFrom(
      ...'\r\n\t\u0000\u007f ,;<>"()[]\\%!:@|/é\u0430\u200b\u00a0\u2028'.split(''),
    );
    fc.assert(
      fc.property(validAddress, hostileChar, fc.nat(), (address, char, at) => {
        const position = at % (address.length + 1);
        const input = address.slice(0, position) + char + address.slice(position);
        expect(parseRecipient(input, ALLOWED).ok).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});
