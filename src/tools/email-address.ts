// The one recipient a model may name for send_email, checked exactly as it will be routed. Mail addresses have
// many legal forms that route somewhere other than they seem to (display names, quoted local parts, comments,
// source routes, percent-hack and bang paths, IP literals), and an MTA may honour any of them. So this accepts
// only the plain `local@domain` form, with a conservative character set, and refuses everything else rather
// than trying to understand it. What is accepted is what goes into the SMTP envelope, byte for byte.
//
// Decisions:
// - The domain must equal an allowed domain exactly (case-insensitively). Subdomains are refused: an allowed
//   `example.com` does not allow `mail.example.com`, which may be a different organisation's server.
// - Non-ASCII is refused outright, in both parts. Internationalized domains could be compared in punycode,
//   but refusing them removes homograph tricks (`exаmple.com` with a Cyrillic а) without a conversion to get
//   right, and SMTPUTF8 local parts are rare.
// - Nothing is trimmed or rewritten except the domain's case: an address with spaces around it is refused
//   with a reason, so what the model asked for is what would have been sent.

export type RecipientCheck = { ok: true; address: string } | { ok: false; reason: string };

const MAX_ADDRESS_CHARS = 254; // RFC 5321 path limit (256) minus the angle brackets
const MAX_LOCAL_CHARS = 64;
const MAX_LABEL_CHARS = 63;

// Letters, digits and . _ + - ' = : enough for real mailboxes (o'brien, first.last+tag, SRS-style =),
// and none of the characters that route (% ! @ :), quote (" \), or mean files and programs to some MTAs (/ |).
const LOCAL_PART = /^[A-Za-z0-9._+'=-]+$/;
const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/** Checks one recipient against the allowed domains; never throws. */
export function parseRecipient(input: string, allowedDomains: readonly string[]): RecipientCheck {
  const allowed = allowedDomains.map((domain) => domain.toLowerCase());
  const refuse = (why: string): RecipientCheck => ({ ok: false, reason: `${why}. ${expected(allowed)}` });

  if (typeof input !== 'string' || input.length === 0) return refuse('the address is empty');
  if (input.length > MAX_ADDRESS_CHARS)
    return refuse(`the address is longer than ${MAX_ADDRESS_CHARS} characters`);
  // Line breaks first: they are how a header or an SMTP command is injected.
  if (/[\r\n]/.test(input)) return refuse('the address contains a line break');
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(input)) return refuse('the address contains a control character');
  if (/[^\u0020-\u007e]/.test(input)) {
    return refuse('the address contains non-ASCII characters; internationalized addresses are not accepted');
  }
  if (/[\s,;]/.test(input)) {
    return refuse('only one recipient is allowed, with no spaces, commas or semicolons');
  }
  if (/[<>"]/.test(input)) {
    return refuse('give the bare address only, with no display name, quotes or angle brackets');
  }
  if (/[()]/.test(input)) return refuse('comments in parentheses are not allowed');
  if (/[[\]]/.test(input))
    return refuse('IP-address literals like [192.0.2.1] are not allowed; use a domain name');
  if (input.includes('\\')) return refuse('backslashes are not allowed');

  const at = input.split('@');
  if (at.length !== 2) return refuse('the address must contain exactly one @');
  const [local = '', rawDomain = ''] = at;

  if (local === '') return refuse('the part before the @ is empty');
  if (rawDomain === '') return refuse('the domain after the @ is empty');
  if (/[%!]/.test(local)) return refuse('routing characters % and ! are not allowed in the address');
  if (local.includes(':')) return refuse('source routes are not allowed');
  if (!LOCAL_PART.test(local)) {
    return refuse("the part before the @ may contain only letters, digits and . _ + - ' =");
  }
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) {
    return refuse('the part before the @ may not start or end with a dot or contain two dots in a row');
  }
  if (local.length > MAX_LOCAL_CHARS) {
    return refuse(`the part before the @ is longer than ${MAX_LOCAL_CHARS} characters`);
  }

  const domain = rawDomain.toLowerCase();
  if (domain.endsWith('.')) return refuse('the domain may not end with a dot');
  const labels = domain.split('.');
  if (labels.some((label) => label === '')) return refuse('the domain has an empty part between dots');
  if (!labels.every((label) => label.length <= MAX_LABEL_CHARS && DOMAIN_LABEL.test(label))) {
    return refuse('the domain may contain only letters, digits, hyphens and dots');
  }
  if (!allowed.includes(domain)) {
    return refuse(
      `the domain ${domain} is not allowed (subdomains of allowed domains are not allowed either)`,
    );
  }
  return { ok: true, address: `${local}@${domain}` };
}

function expected(allowed: readonly string[]): string {
  if (allowed.length === 0) return 'No recipient domain is allowed (EMAIL_ALLOWED_DOMAINS is empty).';
  const domains = allowed.join(', ');
  return `Give exactly one plain address like name@${allowed[0]} at an allowed domain (${domains}).`;
}
