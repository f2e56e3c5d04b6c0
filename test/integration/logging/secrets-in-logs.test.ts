// A marked secret in every placement a log call can give it, through the real logger into a captured
// stream, and through the real start-up paths of the processes: the mark never reaches the output, the
// context around it does.
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../../src/logging/logger.js';
import { redactUrl, redactValue, scrubText } from '../../../src/logging/redact.js';
import { redactSecrets } from '../../../producers/board-app.js';
import { stepLogLine } from '../../../src/worker/progress.js';
import { classifyApiError } from '../../../src/llm/api-errors.js';
import type { StepTrace } from '../../../src/kernel/types.js';

const MARK = 'S3CR3T-MARK-xyz';

function capture(): { logger: Logger; output: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString('utf8'));
      callback();
    },
  });
  return { logger: createLogger('secrets-test', 'trace', stream), output: () => chunks.join('') };
}

/** The output with JSON's escaped quotes read back, to look for context that has quotes in it. */
const unquoted = (text: string): string => text.replaceAll('\\"', '"');

interface Placement {
  where: string;
  log: (logger: Logger) => void;
  /** Context next to the secret that must still be there. */
  kept: string[];
}

const placements: Placement[] = [
  {
    where: 'a *_URL value with a password',
    log: (l) => l.info({ MYSQL_URL: `mysql://root:${MARK}@db.internal:3306/app` }, 'store'),
    kept: ['mysql://root:***@db.internal:3306/app'],
  },
  {
    where: 'a URL whose password holds an unencoded /',
    log: (l) => l.info({ url: `redis://default:ab/${MARK}@redis.internal:6379` }, 'redis'),
    kept: ['redis://default:***@redis.internal:6379'],
  },
  {
    where: 'a URL whose password holds unencoded @ and :',
    log: (l) => l.info({ url: `mysql://root:a@b:${MARK}@db:3306/app` }, 'store'),
    kept: ['mysql://root:***@db:3306/app'],
  },
  {
    where: 'nodemailer auth.pass',
    log: (l) =>
      l.info({ transport: { host: 'mail.internal', auth: { user: 'mailer', pass: MARK } } }, 'smtp'),
    kept: ['mail.internal'],
  },
  {
    where: 'headers.Authorization with a capital A',
    log: (l) => l.info({ headers: { Authorization: `Bearer ${MARK}`, Accept: 'text/plain' } }, 'request'),
    kept: ['text/plain'],
  },
  {
    where: 'headers.authorization in lowercase',
    log: (l) => l.info({ headers: { authorization: `Basic ${MARK}`, host: 'api.internal' } }, 'request'),
    kept: ['api.internal'],
  },
  {
    where: 'an x-api-key header',
    log: (l) => l.info({ headers: { 'x-api-key': MARK, 'x-request-id': 'req-7' } }, 'request'),
    kept: ['req-7'],
  },
  {
    where: 'an X-API-KEY header in uppercase',
    log: (l) => l.info({ headers: { 'X-API-KEY': MARK } }, 'upstream call'),
    kept: ['upstream call'],
  },
  { where: 'secret', log: (l) => l.info({ secret: MARK, job: 'j-1' }, 'x'), kept: ['j-1'] },
  {
    where: 'clientSecret',
    log: (l) => l.info({ clientSecret: MARK, clientId: 'app-1' }, 'x'),
    kept: ['app-1'],
  },
  { where: 'accessToken', log: (l) => l.info({ accessToken: MARK, expiresIn: 3600 }, 'x'), kept: ['3600'] },
  {
    where: 'SMTP_PASSWORD and other env-style names',
    log: (l) =>
      l.info(
        { env: { SMTP_PASSWORD: MARK, OPENAI_API_KEY: MARK, STRIPE_KEY: MARK, AGENT_MAX_TOKENS: 50_000 } },
        'env',
      ),
    kept: ['"AGENT_MAX_TOKENS":50000'],
  },
  {
    where: 'nested ten levels deep',
    log: (l) =>
      l.info({ a: { b: { c: { d: { e: { f: { g: { h: { i: { password: MARK, n: 9 } } } } } } } } } }),
    kept: ['"n":9'],
  },
  {
    where: 'objects inside arrays',
    log: (l) => l.info({ items: [{ id: 'first' }, [{ refresh_token: MARK }]] }, 'list'),
    kept: ['first'],
  },
  {
    where: 'URLs inside an array of strings',
    log: (l) =>
      l.info({ endpoints: ['https://plain.example.com', `https://bot:${MARK}@hooks.example.com/x`] }),
    kept: ['https://plain.example.com', 'hooks.example.com/x'],
  },
  {
    where: 'an error message that quotes a URL',
    log: (l) => l.error({ err: new Error(`connect mysql://root:${MARK}@db:3306/app failed`) }, 'store down'),
    kept: ['store down', 'db:3306/app failed'],
  },
  {
    where: "an error's cause",
    log: (l) =>
      l.error(
        { err: new Error('model call failed', { cause: new Error(`Authorization: Bearer ${MARK}`) }) },
        'model',
      ),
    kept: ['model call failed', 'Authorization'],
  },
  {
    where: "the members of an AggregateError, and a cause's cause",
    log: (l) =>
      l.error({
        err: new AggregateError(
          [new Error(`password=${MARK}`), new Error('x', { cause: new Error(`token: ${MARK}`) })],
          'all connections failed',
        ),
      }),
    kept: ['all connections failed', 'AggregateError'],
  },
  {
    where: 'an Error logged alone (its message becomes msg)',
    log: (l) => l.error(new Error(`GET https://u:${MARK}@api.example.com/v1 failed`)),
    kept: ['api.example.com/v1 failed'],
  },
  {
    where: "an error's own fields",
    log: (l) => l.warn({ error: Object.assign(new Error('bad config'), { config: { apiKey: MARK } }) }, 'x'),
    kept: ['bad config'],
  },
  {
    where: 'the args of a Redis AUTH command on a ReplyError',
    log: (l) =>
      l.error({
        err: Object.assign(new Error('WRONGPASS invalid username-password pair'), {
          command: { name: 'auth', args: ['default', MARK] },
        }),
      }),
    kept: ['WRONGPASS'],
  },
  {
    where: 'a URL in the message string',
    log: (l) => l.info(`retrying https://bot:${MARK}@hooks.example.com/notify`),
    kept: ['retrying https://bot:***@hooks.example.com/notify'],
  },
  {
    where: 'a message built by interpolation',
    log: (l) => l.info('calling the API with %s', `Bearer ${MARK}`),
    kept: ['calling the API with Bearer'],
  },
  {
    where: 'an object interpolated with %j',
    log: (l) => l.info('config %j', { password: MARK, port: 3306 }),
    kept: ['3306'],
  },
  {
    where: 'Set-Cookie and Cookie headers',
    log: (l) =>
      l.info({ headers: { 'Set-Cookie': [`sid=${MARK}; Path=/`], cookie: `a=1; sid=${MARK}` }, status: 302 }),
    kept: ['302'],
  },
  {
    where: 'a Cookie header quoted in the message',
    log: (l) => l.info(`request headers: Cookie: theme=dark; sid=${MARK}`),
    kept: ['request headers: Cookie:'],
  },
  {
    where: 'a query string ?token=',
    log: (l) => l.info({ url: `https://api.example.com/v1/items?token=${MARK}&page=2` }, 'fetch'),
    kept: ['https://api.example.com/v1/items?token=', '&page=2'],
  },
  {
    where: 'query-string secrets in the message',
    log: (l) => l.info(`GET /callback?code=1&access_token=${MARK}&api_key=${MARK}&state=ok`),
    kept: ['GET /callback?code=1', 'state=ok'],
  },
  {
    where: 'api-key: … in a string',
    log: (l) => l.info({ note: `sent with api-key: ${MARK} to the gateway` }),
    kept: ['to the gateway'],
  },
  {
    where: 'JSON text inside a string field',
    log: (l) => l.info({ body: JSON.stringify({ user: 'ana', password: `${MARK} with spaces` }) }),
    kept: ['ana'],
  },
  {
    where: 'a child logger bindings, and a grandchild',
    log: (l) => l.child({ jobId: 'job-42', apiKey: MARK }).child({ session: MARK }).info('step'),
    kept: ['job-42', 'step'],
  },
  {
    where: 'a URL object (shown through its toJSON)',
    log: (l) => l.info({ target: new URL(`https://u:${MARK}@example.com/x`) }),
    kept: ['example.com/x'],
  },
  {
    where: 'a circular object',
    log: (l) => {
      const looped: Record<string, unknown> = { password: MARK, name: 'loop' };
      looped['self'] = looped;
      l.info({ looped });
    },
    kept: ['loop', '[circular]'],
  },
  {
    where: 'an SMTP AUTH PLAIN line',
    log: (l) => l.warn({ response: `535 after AUTH PLAIN ${MARK}` }, 'smtp'),
    kept: ['535 after AUTH PLAIN'],
  },
  {
    where: 'a private key',
    log: (l) => l.info({ pem: `-----BEGIN PRIVATE KEY-----\n${MARK}\n-----END PRIVATE KEY-----` }, 'tls'),
    kept: ['tls'],
  },
  {
    where: 'a fatal line naming a bad URL',
    log: (l) => l.fatal(`MYSQL_URL="mysql://root:12/${MARK}@db/app" is invalid: must be a URL (mysql)`),
    kept: ['MYSQL_URL="mysql://root:***@db/app" is invalid'],
  },
];

describe('a marked secret through the real logger', () => {
  it('has at least 25 placements', () => {
    expect(placements.length).toBeGreaterThanOrEqual(25);
  });

  it.each(placements)('never shows it: $where', ({ log, kept }) => {
    const { logger, output } = capture();
    log(logger);
    const text = output();
    expect(text).not.toBe('');
    expect(text).not.toContain(MARK);
    for (const context of kept) expect(unquoted(text)).toContain(context);
    // Still one JSON object per line.
    for (const line of text.split('\n').filter(Boolean))
      expect(() => JSON.parse(line) as unknown).not.toThrow();
  });

  it('keeps counts, ordinary keys and the caller objects as they were', () => {
    const { logger, output } = capture();
    const fields = { usage: { promptTokens: 10, totalTokens: 12 }, cacheKey: 'k:1', password: MARK };
    logger.info(fields, 'run finished');
    const line = JSON.parse(output()) as Record<string, unknown>;
    expect(line['usage']).toEqual({ promptTokens: 10, totalTokens: 12 });
    expect(line['cacheKey']).toBe('k:1');
    expect(line['password']).toBe('[redacted]');
    expect(fields.password).toBe(MARK);
  });
});

describe('the pieces', () => {
  it('scrubText leaves ordinary text alone', () => {
    for (const text of [
      'worker started',
      'HTTP Basic realm for the board',
      'metrics on /metrics at http://127.0.0.1:9464/metrics',
      'mysql://root@127.0.0.1:3306/agent_fleet',
      'at fn (/app/src/logging/secret-key.ts:12:3)',
      'stopReason=token_budget after 12 steps, maxTokens: 50000',
      'WWW-Authenticate: Basic realm="agent-fleet"',
      'API_TOKEN=(hidden) is invalid: must be at least 16 characters',
      'mysql://root:***@db:3306/app',
    ]) {
      expect(scrubText(text)).toBe(text);
    }
  });

  it('redactUrl takes a value as a whole URL, even with whitespace in the password', () => {
    expect(redactUrl(`mysql://root:two words ${MARK}@db:3306/app`)).toBe('mysql://root:***@db:3306/app');
    expect(redactUrl(`mysql://root:12/${MARK}@db/app`)).toBe('mysql://root:***@db/app');
  });

  it('redactUrl hides the userinfo of a URL written without its scheme or its //', () => {
    expect(redactUrl(`root:${MARK}@db:3306/app`)).toBe('root:***@db:3306/app');
    expect(redactUrl(`mysql:/root:${MARK}@db/app`)).toBe('mysql:/***@db/app');
    expect(redactUrl(`mysql:root:${MARK}@db/app`)).toBe('mysql:***@db/app');
    expect(redactUrl(`mysql//root:${MARK}@db/app`)).toBe('***@db/app');
    expect(redactUrl(`//root:${MARK}@db/app`)).toBe('//***@db/app');
    // Nothing before an `@` but a scheme: nothing to hide.
    expect(redactUrl('mysql:@db/app')).toBe('mysql:@db/app');
  });

  it('scrubText stays linear on hostile text (a pattern that backtracks took seconds here)', () => {
    const started = performance.now();
    for (const unit of ['x://', 'token=abc ', 'a:', 'ab:// ', 'k.']) scrubText(unit.repeat(50_000));
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('redactValue bounds depth and size instead of showing what it did not examine', () => {
    let deep: Record<string, unknown> = { note: MARK };
    for (let i = 0; i < 100; i++) deep = { next: deep };
    expect(JSON.stringify(redactValue(deep, { maxDepth: 16, maxNodes: 1_000 }))).not.toContain(MARK);
    const wide = Array.from({ length: 50 }, () => ({ note: MARK }));
    const shown = JSON.stringify(redactValue(wide, { maxDepth: 16, maxNodes: 10 }));
    expect(shown).toContain('[truncated]');
  });
});

describe('what the board shows', () => {
  it("a failed run's error: a model endpoint's message quoting a credential (the job's failedReason)", () => {
    // The endpoint's own words become the run's error, which is stored, published and shown as the job's
    // failedReason, none of which goes through the logger.
    const echoed = OpenAI.APIError.generate(
      401,
      { error: { message: `invalid key: Bearer ${MARK}; retry with api_key=${MARK}` } },
      undefined,
      new Headers(),
    );
    const error = classifyApiError(echoed);
    expect(error.message).not.toContain(MARK);
    expect(error.message).toContain('The model endpoint answered 401: 401 invalid key: Bearer');
    const dropped = classifyApiError(new Error(`socket hang up at https://u:${MARK}@llm.internal/v1`));
    expect(dropped.message).not.toContain(MARK);
  });

  it("a job's data: secret keys at any depth and credentials inside strings", () => {
    const shown = JSON.stringify(
      redactSecrets({
        task: 'summarise',
        options: { webhook: `https://bot:${MARK}@hooks.example.com/x`, 'X-Api-Key': MARK },
        notes: [`Authorization: Bearer ${MARK}`],
      }),
    );
    expect(shown).not.toContain(MARK);
    expect(shown).toContain('summarise');
    expect(shown).toContain('hooks.example.com/x');
  });

  it("a step's job log line: an error quoting a URL", () => {
    const trace = {
      step: 2,
      kind: 'answer',
      actions: [],
      promptTokens: 10,
      completionTokens: 5,
      latencyMs: 40,
      error: `model call failed: POST https://proxy:${MARK}@llm.internal/v1/chat/completions`,
      totals: { totalTokens: 15, costUsd: 0, maxSteps: 8 },
    } as unknown as StepTrace;
    const line = stepLogLine(trace);
    expect(line).not.toContain(MARK);
    expect(line).toContain('llm.internal/v1/chat/completions');
  });
});

/** A process started as an operator would, with a bad environment; everything it printed. */
function runProcess(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args, script], {
      cwd: process.cwd(),
      env: { ...process.env, LOG_LEVEL: 'info', NODE_ENV: 'production', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The worker wants a model endpoint before it opens the store; nothing listens there, nothing calls it. */
const NO_MODEL_CALLS = { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' };

describe('fatal start-up lines of real processes', () => {
  it.each<{ what: string; script: string; env: Record<string, string>; kept: string }>([
    {
      what: 'the worker, MYSQL_URL password with an unencoded / (refused by the URL parser)',
      script: 'workers/agent-worker.ts',
      env: { MYSQL_URL: `mysql://root:ab/${MARK}@127.0.0.1:3306/agent_fleet`, ...NO_MODEL_CALLS },
      kept: 'MYSQL_URL="mysql://root:***@127.0.0.1:3306/agent_fleet" is invalid',
    },
    {
      what: 'the worker, MYSQL_URL password that the URL parser misreads as a port and a path',
      script: 'workers/agent-worker.ts',
      env: { MYSQL_URL: `mysql://root:1234/${MARK}@127.0.0.1:3306/agent_fleet`, ...NO_MODEL_CALLS },
      kept: 'MYSQL_URL=mysql://root:***@127.0.0.1:3306/agent_fleet',
    },
    {
      what: 'the worker, MYSQL_URL without its // (a path to the URL parser, shown in the message)',
      script: 'workers/agent-worker.ts',
      env: { MYSQL_URL: `mysql:/root:${MARK}@127.0.0.1:3306/agent_fleet`, ...NO_MODEL_CALLS },
      kept: 'MYSQL_URL="mysql:/***@127.0.0.1:3306/agent_fleet" is invalid',
    },
    {
      what: 'the worker, MYSQL_URL without its scheme',
      script: 'workers/agent-worker.ts',
      env: { MYSQL_URL: `root:${MARK}@127.0.0.1:3306/agent_fleet`, ...NO_MODEL_CALLS },
      kept: 'MYSQL_URL="root:***@127.0.0.1:3306/agent_fleet" is invalid',
    },
    {
      what: 'the API, REDIS_URL password with an unencoded /',
      script: 'producers/api.ts',
      env: {
        REDIS_URL: `redis://default:x/${MARK}@127.0.0.1:6379`,
        API_TOKEN: 'a-token-of-16-chars-or-more',
      },
      kept: 'REDIS_URL="redis://default:***@127.0.0.1:6379" is invalid',
    },
    {
      what: 'the scheduler, SMTP_URL password with an unencoded /',
      script: 'workers/scheduler.ts',
      env: { SMTP_URL: `smtp://mailer:p/${MARK}@mail.internal:587` },
      kept: 'SMTP_URL="smtp://mailer:***@mail.internal:587" is invalid',
    },
  ])(
    '$what',
    async ({ script, env, kept }) => {
      const { code, output } = await runProcess(script, env);
      expect(code).toBe(1);
      expect(unquoted(output)).toContain(kept);
      expect(output).not.toContain(MARK);
    },
    40_000,
  );
});

describe('a process that crashes', () => {
  it('logs the uncaught error redacted instead of letting Node print it raw', async () => {
    const code =
      "import { logCrashes } from './src/logging/log-crashes.ts';" +
      "import { createLogger } from './src/logging/logger.ts';" +
      "logCrashes(createLogger('crasher'), 'crasher');" +
      `const error = new Error('lost redis://default:${MARK}@redis.internal:6379');` +
      `Object.assign(error, { command: { name: 'auth', args: ['default', '${MARK}'] } });` +
      'void Promise.reject(error);';
    const { code: exit, output } = await runProcess(code, {}, ['--input-type=module', '-e']);
    expect(exit).toBe(1);
    expect(output).toContain('crasher: lost redis://default:***@redis.internal:6379');
    expect(output).toContain('"msg":"crashed"');
    expect(output).not.toContain(MARK);
  }, 40_000);
});
