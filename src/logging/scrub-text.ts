// Credentials inside free text: a log message, an error's message or stack, a value shown to a person.
// Nothing here parses: a URL whose password holds an unencoded `/`, `@` or `:` is exactly the one that
// `new URL` rejects or misreads, so the patterns work on the raw characters.
import { isSecretKey } from './secret-key.js';

export const REDACTED = '[redacted]';
/** What stands for a URL's password: short, and already the form the project's messages use. */
export const URL_PASSWORD_MASK = '***';

const MASKS = new Set([
  REDACTED,
  URL_PASSWORD_MASK,
  '(hidden)',
  `"${REDACTED}"`,
  `'${REDACTED}'`,
  `\\"${REDACTED}\\"`,
]);

/** Where a URL starts: a scheme at the start of a word, then `://`. */
const SCHEME = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** `password=…`, `"apiKey": "…"`, `?access_token=…`, `x-api-key: …`: a name, then `:` or `=`. */
const LABEL = /(?<![\w.-])([A-Za-z_][\w.-]{0,63})(\\?["']?[ \t]*[:=][ \t]*)/g;
/** A quoted string: `\"…\"` (JSON inside a JSON string), `"…"`, `'…'`, or in parentheses: `(hidden)`. */
const QUOTED = String.raw`\([^()\r\n]*\)|\\"(?:[^\\\r\n]|\\[^"\r\n])*\\"|"(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*'`;
/** `secret-key.ts:12:3` in a stack trace is a place in a file, not a secret. */
const SOURCE_FILE = /\.[cm]?[jt]sx?$/;
/** The value after a secret label: quoted, or up to the next delimiter, with its auth scheme if any. */
const LABEL_VALUE = new RegExp(
  String.raw`(?:(?:Bearer|Basic|Digest|Token|Negotiate)[ \t]+)?(?:${QUOTED}|[^\s"'&,;)}\]]+)`,
  'iy',
);
/** A cookie header's value runs to the end of the line: `a=1; b=2` is one secret, not two. */
const COOKIE_VALUE = new RegExp(String.raw`${QUOTED}|[^\r\n]+`, 'y');

/** Authorization schemes anywhere; a lowercase word after one is prose or a parameter (`Basic realm=`). */
const AUTH_SCHEME = /\b([Bb]earer|BEARER|Basic|BASIC|Digest|Negotiate)([ \t]+)([A-Za-z0-9._~+/=-]+)/g;
/** SMTP's AUTH commands carry base64 credentials. */
const SMTP_AUTH = /\b(AUTH[ \t]+(?:PLAIN|LOGIN|XOAUTH2|CRAM-MD5)[ \t]+)(\S+)/gi;
const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g;
/** Tokens recognisable by their shape: JWTs, OpenAI and GitHub keys, AWS access key ids, Slack tokens. */
const KNOWN_TOKEN =
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|\bsk-[A-Za-z0-9_-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bAKIA[0-9A-Z]{16}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}/g;

/** A cheap first look: every pattern below needs one of these. */
const MAY_HOLD_SECRET =
  /:\/\/|pass|pwd|secret|token|key|auth|cookie|credential|session|signature|bearer|basic|digest|negotiate|jwt|otp|sig|dsn|-----BEGIN|eyJ|sk-|gh[pousr]_|AKIA|xox/i;

/** Every credential in `text` replaced; the rest (hosts, users, databases, wording) kept. */
export function scrubText(text: string): string {
  // Most log text holds none of these: one scan, and it goes out as it came.
  if (text.length < 6 || !MAY_HOLD_SECRET.test(text)) return text;
  let result = text;
  if (result.includes('://')) result = result.replace(/\S+/g, hideUrlCredentials);
  if (/[:=]/.test(result)) result = hideLabelledValues(result);
  result = result.replace(AUTH_SCHEME, (match, scheme: string, space: string, token: string) =>
    /^[a-z]+=*$/.test(token) || MASKS.has(token) ? match : `${scheme}${space}${REDACTED}`,
  );
  if (/AUTH/i.test(result)) result = result.replace(SMTP_AUTH, `$1${REDACTED}`);
  if (result.includes('-----BEGIN')) result = result.replace(PRIVATE_KEY, REDACTED);
  return result.replace(KNOWN_TOKEN, REDACTED);
}

/**
 * A value known to be one URL (an environment variable), password hidden. Unlike free text, a password with
 * unencoded whitespace still ends at the last `@`, since the whole value is the URL.
 */
export function redactUrl(value: string): string;
export function redactUrl(value: string | undefined): string | undefined;
export function redactUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(value)?.[0];
  const at = value.lastIndexOf('@');
  if (scheme === undefined) return scrubText(at < 0 ? value : hideMisspeltUserinfo(value, at));
  if (at < scheme.length) return scrubText(value);
  return scrubText(
    hideUserinfo(value.slice(0, at + 1), scheme, value.slice(scheme.length, at)) + value.slice(at + 1),
  );
}

/**
 * A URL variable without its `//` or its scheme (`mysql:/root:pw@db`, `root:pw@db`): the URL parser takes
 * the credentials for a path, or refuses the value, and the message that names the value would show them.
 * Everything between a leading `scheme:` and slashes, if any, and the last `@` is hidden; `root:pw@db` keeps
 * `root:`, read as such a prefix.
 */
function hideMisspeltUserinfo(value: string, at: number): string {
  const prefix = /^(?:[A-Za-z][A-Za-z0-9+.-]*:)?\/*/.exec(value)?.[0] ?? '';
  if (at <= prefix.length) return value;
  return `${prefix}${URL_PASSWORD_MASK}${value.slice(at)}`;
}

/**
 * In one whitespace-free run: from the first `scheme://` to the last `@` is the userinfo, whatever the password
 * holds (`mysql://root:a/b@c@db:3306/x`). Several URLs in one run are hidden together, erring on the side of
 * hiding. Indexes, not a backtracking pattern: linear in the length of the text.
 */
function hideUrlCredentials(run: string): string {
  if (!run.includes('://')) return run;
  const scheme = SCHEME.exec(run);
  if (scheme === null) return run;
  const start = scheme.index + scheme[0].length;
  const at = run.lastIndexOf('@');
  if (at < start) return run;
  const url = hideUserinfo(run.slice(scheme.index, at + 1), scheme[0], run.slice(start, at));
  return run.slice(0, scheme.index) + url + run.slice(at + 1);
}

function hideUserinfo(match: string, scheme: string, userinfo: string): string {
  const colon = userinfo.indexOf(':');
  // No colon: a user without a password (`mysql://root@db`), or an `@` further on in a path.
  if (colon === -1) return match;
  const user = userinfo.slice(0, colon);
  if (userinfo.slice(colon + 1) === URL_PASSWORD_MASK && !/[/?#]/.test(user)) return match;
  // A `/` before the colon: not a plain user, so no part of it is kept.
  return /[/?#]/.test(user) ? `${scheme}${URL_PASSWORD_MASK}@` : `${scheme}${user}:${URL_PASSWORD_MASK}@`;
}

function hideLabelledValues(text: string): string {
  let result = '';
  let copied = 0;
  LABEL.lastIndex = 0;
  for (let label = LABEL.exec(text); label !== null; label = LABEL.exec(text)) {
    const name = label[1] ?? '';
    if (!isSecretKey(name) || SOURCE_FILE.test(name)) continue;
    const valueAt = label.index + label[0].length;
    const valuePattern = /cookie/i.test(name) ? COOKIE_VALUE : LABEL_VALUE;
    valuePattern.lastIndex = valueAt;
    const value = valuePattern.exec(text)?.[0];
    if (value === undefined || MASKS.has(value)) continue;
    const quote = quoteOf(value);
    result += text.slice(copied, valueAt) + quote + REDACTED + quote;
    copied = valueAt + value.length;
    LABEL.lastIndex = copied;
  }
  return copied === 0 ? text : result + text.slice(copied);
}

function quoteOf(value: string): string {
  for (const quote of ['\\"', '"', "'"]) {
    if (value.length >= 2 * quote.length && value.startsWith(quote) && value.endsWith(quote)) return quote;
  }
  return '';
}
