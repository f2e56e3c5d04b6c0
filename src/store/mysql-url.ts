// What MYSQL_URL says, parsed once, with a form safe to print: every message about the store names the URL
// so an operator knows which variable to fix, and none of them may leak the password.
import { ConfigError } from '../kernel/errors.js';
import { redactUrl } from '../logging/redact.js';

export interface MysqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** The URL with its password replaced, for messages and logs. */
  redacted: string;
}

const DEFAULT_PORT = 3306;
// MySQL refuses these in database names (they map to directories) and caps names at 64 characters.
const BAD_DATABASE = /[/\\.\0]|\s$/;

export function parseMysqlUrl(url: string): MysqlTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(
      'bad_mysql_url',
      'MYSQL_URL is not a URL (expected mysql://user:password@host:port/db)',
    );
  }
  const redacted = redactUrl(url);
  if (parsed.protocol !== 'mysql:') {
    throw new ConfigError('bad_mysql_url', `MYSQL_URL=${redacted} must start with mysql://`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (database === '' || database.length > 64 || BAD_DATABASE.test(database)) {
    throw new ConfigError(
      'bad_mysql_url',
      `MYSQL_URL=${redacted} must name a database (1-64 characters, no / \\ .)`,
    );
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port === '' ? DEFAULT_PORT : Number(parsed.port),
    user: decodeURIComponent(parsed.username) || 'root',
    password: decodeURIComponent(parsed.password),
    database,
    redacted,
  };
}
