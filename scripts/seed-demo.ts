// `npm run seed-demo`: creates the demo's sales database and its read-only account, both as DATA_MYSQL_URL
// names them (database, user, password), using the account of MYSQL_URL (root by default) on that server.
// Idempotent; a second run leaves current data alone. Stdout gets one JSON line; a failure is one line on
// stderr and exit code 1.
import { env, redactUrl } from '../config/env.js';
import { seedDemoDatabase } from '../src/demo/seed-demo-database.js';
import { scrubText } from '../src/logging/redact.js';
import { parseMysqlUrl } from '../src/store/mysql-url.js';

async function main(): Promise<void> {
  const { MYSQL_URL, DATA_MYSQL_URL } = env();
  const data = parseDataUrl(DATA_MYSQL_URL);
  const admin = parseMysqlUrl(MYSQL_URL);
  if (`${admin.host}:${admin.port}` !== `${data.host}:${data.port}`) {
    process.stderr.write(
      `seed-demo: warning: seeding ${admin.host}:${admin.port} (MYSQL_URL) but DATA_MYSQL_URL points at ` +
        `${data.host}:${data.port}\n`,
    );
  }
  const started = Date.now();
  const result = await seedDemoDatabase({
    adminUrl: MYSQL_URL,
    database: data.database,
    readerUser: data.user,
    readerPassword: data.password,
  });
  process.stdout.write(
    JSON.stringify({ ...result, dataUrl: redactUrl(DATA_MYSQL_URL), ms: Date.now() - started }) + '\n',
  );
}

/** DATA_MYSQL_URL through the store's parser, with its messages naming the right variable. */
function parseDataUrl(url: string): ReturnType<typeof parseMysqlUrl> {
  try {
    return parseMysqlUrl(url);
  } catch (error) {
    if (error instanceof Error) error.message = error.message.replace(/^MYSQL_URL/, 'DATA_MYSQL_URL');
    throw error;
  }
}

main().catch((error: unknown) => {
  const line = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`seed-demo failed: ${scrubText(line)}\n`);
  process.exitCode = 1;
});
