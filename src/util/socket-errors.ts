// Node's socket error codes, sorted by what they prove: one owner, so every adapter (MySQL, Redis, SMTP, MCP)
// reads a dropped or refused connection the same way. Always by the structured `code`, never by message text.

/** Raised before a connection existed: nothing the caller sent can have reached the server. */
export const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
]);

/** The connection could not be made, or broke: the server is unreachable, not the request wrong. */
export const SOCKET_FAILURE_CODES: ReadonlySet<string> = new Set([
  ...NOT_CONNECTED_CODES,
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
]);
