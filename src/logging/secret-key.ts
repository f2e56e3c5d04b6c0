// Which keys name a secret, by pattern rather than by a list of paths: `password`, `SMTP_PASSWORD`,
// `headers.Authorization`, `x-api-key`, `clientSecret`, `auth` (nodemailer's {user, pass}), `Set-Cookie`…,
// in any case and spelling (camel, snake, kebab, SCREAMING). Counts stay readable: `maxTokens`,
// `promptTokens`, `AGENT_MAX_TOKENS` name numbers of tokens, not a token.

/** Matched against the key lowercased with every separator removed: `x-api-key` → `xapikey`. */
const SECRET_FRAGMENT =
  /passw(?:or)?d|passphrase|secret|token(?!s|iz)|(?:api|private|access|signing|encryption|master|ssh|license|client|hmac|shared)key|authori[sz]ation|cookie|credential|signature|session|bearer|jwt/;

/** Short words that are secrets only on their own: `pass` but not `passed`, `auth` but not `author`. */
const SECRET_WORDS = new Set(['pass', 'pwd', 'auth', 'oauth', 'otp', 'sig', 'dsn']);

/** Environment style: `STRIPE_KEY`, `OPENAI_API_KEY` (not `cacheKey`, which names a Redis key). */
const ENV_KEY = /^[A-Z0-9_]*_KEY$/;

const cache = new Map<string, boolean>();
const CACHE_LIMIT = 2_000;

export function isSecretKey(key: string): boolean {
  let secret = cache.get(key);
  if (secret === undefined) {
    secret = classify(key);
    // Keys are few (field names), but job data may carry arbitrary ones: keep the cache bounded.
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(key, secret);
  }
  return secret;
}

function classify(key: string): boolean {
  if (SECRET_FRAGMENT.test(key.toLowerCase().replace(/[^a-z0-9]/g, ''))) return true;
  if (ENV_KEY.test(key)) return true;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  return words.some((word) => SECRET_WORDS.has(word));
}
