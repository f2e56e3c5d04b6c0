// parseEnv: defaults, one clear line per bad value that names its variable, secrets kept out of messages.
import { describe, expect, it } from 'vitest';
import { parseEnv, redactUrl } from '../../../config/env.js';
import * as D from '../../../src/kernel/defaults.js';
import { ConfigError } from '../../../src/kernel/errors.js';
import { retentionFrom } from '../../../src/queue/retention.js';

function envError(source: Record<string, string | undefined>): ConfigError {
  try {
    parseEnv(source);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(source)} to be refused`);
}

describe('parseEnv defaults', () => {
  it('an empty environment gives every default', () => {
    const env = parseEnv({});
    expect(env).toMatchObject({
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'agentfleet',
      MYSQL_URL: 'mysql://root@127.0.0.1:3306/agent_fleet',
      LLM_MODEL: D.DEFAULT_MODEL,
      LLM_TEMPERATURE: D.DEFAULT_TEMPERATURE,
      LLM_REASONING_EFFORT: 'auto',
      LLM_TIMEOUT_MS: D.DEFAULT_MODEL_TIMEOUT_MS,
      AGENT_PROTOCOL: 'tools',
      AGENT_MAX_STEPS: D.DEFAULT_MAX_STEPS,
      AGENT_MAX_TOKENS: D.DEFAULT_MAX_TOKENS,
      AGENT_MAX_COST_USD: D.DEFAULT_MAX_COST_USD,
      AGENT_DEADLINE_MS: D.DEFAULT_DEADLINE_MS,
      AGENT_MEMORY_WINDOW: D.DEFAULT_MEMORY_WINDOW,
      AGENT_TOOL_RESULT_MAX_TOKENS: D.DEFAULT_TOOL_RESULT_MAX_TOKENS,
      WORKER_CONCURRENCY: 10,
      EMAIL_FROM: 'reports@agent-fleet.local',
      EMAIL_ALLOWED_DOMAINS: ['example.com'],
      EMAIL_MAX_PER_RUN: 10,
      SQL_MAX_RESULT_BYTES: 1_048_576,
      // The demo's embedded sink listens there.
      SMTP_URL: 'smtp://127.0.0.1:1025',
      EMAIL_DRY_RUN: false,
      API_PORT: 3100,
      BOARD_PORT: 3200,
      // Listened on where the log says: this machine only, unless told otherwise (compose: 0.0.0.0).
      API_HOST: '127.0.0.1',
      BOARD_HOST: '127.0.0.1',
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    for (const key of [
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      // Unset: the kernel's default, by model (512, or 4,096 for a reasoning model that reasons).
      'LLM_MAX_TOKENS',
      'LLM_PRICES',
      'API_TOKEN',
      'BOARD_USER',
      'BOARD_PASSWORD',
      'BOARD_ADMIN_USER',
      'BOARD_ADMIN_PASSWORD',
      'BOARD_ORIGIN',
      'FLEET_DAILY_MAX_COST_USD',
      'FLEET_DAILY_MAX_TOKENS',
      'MODEL_RPM',
      'MODEL_TPM',
      'TENANT_CONCURRENCY',
      'TENANT_DAILY_MAX_COST_USD',
      'TENANT_DAILY_MAX_TOKENS',
    ] as const)
      expect(env[key], key).toBeUndefined();
  });

  it('an empty string is the same as unset', () => {
    const env = parseEnv({
      LLM_MODEL: '',
      AGENT_MAX_STEPS: '',
      OPENAI_API_KEY: '',
      API_TOKEN: '',
      LLM_PRICES: '',
    });
    expect(env.LLM_MODEL).toBe('gpt-5.4-mini');
    expect(env.AGENT_MAX_STEPS).toBe(D.DEFAULT_MAX_STEPS);
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expect(env.API_TOKEN).toBeUndefined();
    expect(env.LLM_PRICES).toBeUndefined();
  });

  it('a renamed variable still set is refused, naming the new one', () => {
    expect(() => parseEnv({ EMAIL_SWEEP_INTERVAL_MS: '30000' })).toThrow(
      'EMAIL_SWEEP_INTERVAL_MS was renamed EFFECT_SWEEP_INTERVAL_MS: set EFFECT_SWEEP_INTERVAL_MS instead',
    );
    expect(parseEnv({ EFFECT_SWEEP_INTERVAL_MS: '30000' }).EFFECT_SWEEP_INTERVAL_MS).toBe(30_000);
  });

  it('keeps steps 30 days and runs 400 by default; runs may be kept forever (0), steps may not', () => {
    expect(parseEnv({})).toMatchObject({ STORE_KEEP_STEPS_DAYS: 30, STORE_KEEP_RUNS_DAYS: 400 });
    expect(parseEnv({ STORE_KEEP_RUNS_DAYS: '0' }).STORE_KEEP_RUNS_DAYS).toBe(0);
    expect(parseEnv({ STORE_KEEP_STEPS_DAYS: '7' }).STORE_KEEP_STEPS_DAYS).toBe(7);
    expect(() => parseEnv({ STORE_KEEP_STEPS_DAYS: '0' })).toThrow(/STORE_KEEP_STEPS_DAYS/);
    // Effects' records kept less long than a failed task stays retryable in Redis (7 days by default): refused.
    expect(() => parseEnv({ STORE_KEEP_STEPS_DAYS: '3' })).toThrow(
      "STORE_KEEP_STEPS_DAYS=3 deletes the records of a task's effects while a failed task stays retryable in " +
        'Redis (TASKS_KEEP_FAILED_AGE_S=604800, 7 days): retried after that, it would make them again. Keep the ' +
        'steps at least 7 days, or failed tasks less long',
    );
    expect(
      parseEnv({ STORE_KEEP_STEPS_DAYS: '3', TASKS_KEEP_FAILED_AGE_S: '86400' }).STORE_KEEP_STEPS_DAYS,
    ).toBe(3);
    expect(() => parseEnv({ STORE_KEEP_RUNS_DAYS: '-1' })).toThrow(/STORE_KEEP_RUNS_DAYS/);
  });

  it('undefined values and unknown variables are ignored', () => {
    expect(parseEnv({ AGENT_MAX_STEPS: undefined, PATH: '/usr/bin', HOME: '/root' }).AGENT_MAX_STEPS).toBe(
      D.DEFAULT_MAX_STEPS,
    );
  });

  it('numbers are read from strings', () => {
    const env = parseEnv({
      AGENT_MAX_STEPS: '12',
      AGENT_MAX_COST_USD: '0.25',
      LLM_TEMPERATURE: '0',
      API_PORT: '0',
      FLEET_DAILY_MAX_TOKENS: '1000000',
    });
    expect(env).toMatchObject({
      AGENT_MAX_STEPS: 12,
      AGENT_MAX_COST_USD: 0.25,
      LLM_TEMPERATURE: 0,
      API_PORT: 0,
      FLEET_DAILY_MAX_TOKENS: 1_000_000,
    });
  });

  it('valid URLs, secrets and enums pass through', () => {
    const env = parseEnv({
      REDIS_URL: 'rediss://:pw@redis.internal:6380',
      OPENAI_BASE_URL: 'http://localhost:8080/v1',
      SMTP_URL: 'smtps://user:pw@mail.example.com:465',
      OPENAI_API_KEY: 'sk-test',
      API_TOKEN: '0123456789abcdef',
      BOARD_PASSWORD: 'password',
      AGENT_PROTOCOL: 'json',
      LOG_LEVEL: 'silent',
      QUEUE_PREFIX: 'fleet:staging_1.a-b',
    });
    expect(env).toMatchObject({
      REDIS_URL: 'rediss://:pw@redis.internal:6380',
      OPENAI_API_KEY: 'sk-test',
      AGENT_PROTOCOL: 'json',
      QUEUE_PREFIX: 'fleet:staging_1.a-b',
    });
  });
});

describe('parseEnv refusals', () => {
  const cases: [string, string, RegExp][] = [
    ['AGENT_MAX_STEPS', '0', />=1/],
    ['AGENT_MAX_STEPS', '101', /<=100/],
    ['AGENT_MAX_STEPS', '2.5', /expected int/],
    ['AGENT_MAX_STEPS', 'ten', /number/],
    ['AGENT_MAX_COST_USD', '0', />0/],
    ['AGENT_MAX_COST_USD', '1001', /<=1000/],
    ['AGENT_DEADLINE_MS', '999', />=1000/],
    ['AGENT_MEMORY_WINDOW', '1', />=2/],
    ['LLM_TEMPERATURE', '2.5', /<=2/],
    ['LLM_TIMEOUT_MS', '50', />=100/],
    ['LLM_REASONING_EFFORT', 'extreme', /auto.*none.*minimal.*low.*medium.*high.*xhigh.*max/],
    ['WORKER_CONCURRENCY', '0', />=1/],
    ['WORKER_CONCURRENCY', '10001', /<=10000/],
    ['API_PORT', '65536', /<=65535/],
    ['BOARD_PORT', '-1', />=0/],
    ['REDIS_URL', 'http://redis:6379', /must be a URL \(redis, rediss\)/],
    ['REDIS_URL', 'not a url', /must be a URL/],
    ['MYSQL_URL', 'postgres://db/x', /must be a URL \(mysql\)/],
    ['OPENAI_BASE_URL', 'ftp://x', /must be a URL \(http, https\)/],
    ['SMTP_URL', 'http://mail', /must be a URL \(smtp, smtps\)/],
    // Without its //, the URL parser reads the rest as a path (`root:pw@db` a database name) and accepts it.
    ['MYSQL_URL', 'mysql:db/x', /must be a URL \(mysql\)/],
    ['REDIS_URL', 'redis:cache', /must be a URL \(redis, rediss\)/],
    ['QUEUE_PREFIX', 'has space', /letters, digits and _\.:- only/],
    ['QUEUE_PREFIX', 'x'.repeat(65), /letters, digits/],
    ['AGENT_PROTOCOL', 'xml', /"tools"\|"json"/],
    ['LOG_LEVEL', 'loud', /expected one of/],
    ['EMAIL_FROM', 'not-an-email', /email/i],
    ['FLEET_DAILY_MAX_COST_USD', '-1', />0/],
    ['MODEL_RPM', '0', />=1/],
    ['MODEL_TPM', '0', /whole number of tokens, or model=tokens pairs/],
    ['MODEL_TPM', 'gpt-4.1=lots', /bad: "gpt-4.1=lots"/],
    ['MODEL_TPM', '=5', /bad: "=5"/],
    ['TENANT_CONCURRENCY', '0', />=1/],
    ['TENANT_DAILY_MAX_COST_USD', '0', />0/],
    ['TENANT_DAILY_MAX_TOKENS', '1.5', /expected int/],
    ['SQL_MAX_RESULT_BYTES', '1000', />=1024/],
    ['SQL_MAX_RESULT_BYTES', '1MB', /number/],
  ];

  it.each(cases)('%s=%s names the variable and shows the value', (name, value, reason) => {
    const error = envError({ [name]: value });
    expect(error.code).toBe('bad_env');
    expect(error.kind).toBe('config');
    expect(error.message.startsWith(`${name}=${JSON.stringify(value)} is invalid: `)).toBe(true);
    expect(error.message).toMatch(reason);
  });

  it('MODEL_TPM: one limit for every model, or limits by model with a default', () => {
    expect(parseEnv({ MODEL_TPM: '90000' }).MODEL_TPM).toEqual({ all: 90_000 });
    expect(parseEnv({ MODEL_TPM: 'gpt-4.1=30000, gpt-4.1-mini=200000' }).MODEL_TPM).toEqual({
      byModel: { 'gpt-4.1': 30_000, 'gpt-4.1-mini': 200_000 },
    });
    expect(parseEnv({ MODEL_TPM: 'gpt-4.1=30000,*=60000' }).MODEL_TPM).toEqual({
      byModel: { 'gpt-4.1': 30_000 },
      others: 60_000,
    });
    expect(
      parseEnv({
        TENANT_CONCURRENCY: '3',
        TENANT_DAILY_MAX_COST_USD: '2.5',
        TENANT_DAILY_MAX_TOKENS: '100000',
      }),
    ).toMatchObject({
      TENANT_CONCURRENCY: 3,
      TENANT_DAILY_MAX_COST_USD: 2.5,
      TENANT_DAILY_MAX_TOKENS: 100_000,
    });
  });

  it('listen hosts and the board origin: addresses and an origin, nothing else', () => {
    expect(parseEnv({ API_HOST: '0.0.0.0', BOARD_HOST: '::', METRICS_HOST: 'localhost' })).toMatchObject({
      API_HOST: '0.0.0.0',
      BOARD_HOST: '::',
      METRICS_HOST: 'localhost',
    });
    expect(envError({ API_HOST: 'http://0.0.0.0' }).message).toMatch(
      /^API_HOST="http:\/\/0\.0\.0\.0" is invalid/,
    );
    expect(envError({ BOARD_HOST: '0.0.0.0:3200' }).message).toMatch(/^BOARD_HOST=/);
    expect(parseEnv({ BOARD_ORIGIN: 'https://board.example.com' }).BOARD_ORIGIN).toBe(
      'https://board.example.com',
    );
    expect(envError({ BOARD_ORIGIN: 'https://board.example.com/' }).message).toMatch(
      /^BOARD_ORIGIN=.* origin/,
    );
  });

  it('the first bad variable is named when several are bad', () => {
    const error = envError({ AGENT_MAX_STEPS: '0', LLM_TEMPERATURE: '9' });
    expect(error.message).toMatch(/^(AGENT_MAX_STEPS|LLM_TEMPERATURE)=/);
  });

  it('secrets are never shown', () => {
    const secrets: [string, string][] = [
      ['API_TOKEN', 'short-secret'],
      ['BOARD_PASSWORD', 'hunter2'],
      ['BOARD_ADMIN_PASSWORD', 'short-admin'],
    ];
    for (const [name, value] of secrets) {
      const error = envError({ [name]: value });
      expect(error.message).toMatch(new RegExp(`^${name}=\\(hidden\\) is invalid: must be at least`));
      expect(error.message).not.toContain(value);
    }
  });

  it('limits named *_TOKENS are refused by name (their value is hidden like a token)', () => {
    expect(envError({ LLM_MAX_TOKENS: '15' }).message).toMatch(/^LLM_MAX_TOKENS=\S+ is invalid: .*>=16/);
    expect(envError({ AGENT_MAX_TOKENS: '99' }).message).toMatch(/^AGENT_MAX_TOKENS=\S+ is invalid: .*>=100/);
  });

  it('a URL password is redacted in the message', () => {
    const error = envError({ MYSQL_URL: 'postgres://app:s3cr3t-pw@db.internal:5432/app' });
    expect(error.message).toBe(
      'MYSQL_URL="postgres://app:***@db.internal:5432/app" is invalid: must be a URL (mysql)',
    );
    expect(envError({ REDIS_URL: 'http://:only-pw@redis' }).message).not.toContain('only-pw');
  });
});

describe('redactUrl', () => {
  it('hides the password and nothing else', () => {
    expect(redactUrl('mysql://root:pw@127.0.0.1:3306/db')).toBe('mysql://root:***@127.0.0.1:3306/db');
    expect(redactUrl('redis://:pw@host:6379')).toBe('redis://:***@host:6379');
    // The value as given (not normalised by a URL parser), password hidden.
    expect(redactUrl('SMTPS://user:p%40ss@mail:465')).toBe('SMTPS://user:***@mail:465');
    expect(redactUrl('mysql://root@127.0.0.1:3306/db')).toBe('mysql://root@127.0.0.1:3306/db');
    expect(redactUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redactUrl('not a url')).toBe('not a url');
    expect(redactUrl(undefined)).toBeUndefined();
  });
});

describe('EMAIL_ALLOWED_DOMAINS', () => {
  it('a comma list, trimmed, lowercased, empty items dropped', () => {
    expect(
      parseEnv({ EMAIL_ALLOWED_DOMAINS: ' Example.COM, ,acme.io,,  SUB.acme.io ' }).EMAIL_ALLOWED_DOMAINS,
    ).toEqual(['example.com', 'acme.io', 'sub.acme.io']);
    expect(parseEnv({ EMAIL_ALLOWED_DOMAINS: 'one.org' }).EMAIL_ALLOWED_DOMAINS).toEqual(['one.org']);
  });

  it('only commas give an empty list (no domain allowed), not the default', () => {
    expect(parseEnv({ EMAIL_ALLOWED_DOMAINS: ' , ,' }).EMAIL_ALLOWED_DOMAINS).toEqual([]);
  });
});

describe('LLM_PRICES', () => {
  it('a JSON table of prices per model', () => {
    const env = parseEnv({
      LLM_PRICES:
        '{"local-llama": {"inputPerMillion": 0, "outputPerMillion": 0}, "gpt-4o": {"inputPerMillion": 1.5, "outputPerMillion": 6}}',
    });
    expect(env.LLM_PRICES).toEqual({
      'local-llama': { inputPerMillion: 0, outputPerMillion: 0 },
      'gpt-4o': { inputPerMillion: 1.5, outputPerMillion: 6 },
    });
    expect(parseEnv({ LLM_PRICES: '{}' }).LLM_PRICES).toEqual({});
  });

  const bad: [string, RegExp][] = [
    ['not json', /must be JSON/],
    ['{"m": {"inputPerMillion": 1', /must be JSON/],
    ['[]', /expected record/],
    ['null', /expected record/],
    ['42', /expected record/],
    ['{"m": 5}', /expected object/],
    ['{"m": {"inputPerMillion": 1}}', /expected number/],
    ['{"m": {"inputPerMillion": -1, "outputPerMillion": 2}}', />=0/],
    ['{"m": {"inputPerMillion": "1", "outputPerMillion": 2}}', /expected number/],
    ['{"m": {"inputPerMillion": 1, "outputPerMillion": 2, "currency": "EUR"}}', /Unrecognized key/],
  ];

  it.each(bad)('%s is refused', (value, reason) => {
    const error = envError({ LLM_PRICES: value });
    expect(error.message.startsWith(`LLM_PRICES=${JSON.stringify(value)} is invalid: `)).toBe(true);
    expect(error.message).toMatch(reason);
  });
});

describe('retention variables', () => {
  it('default to a week of results, a day of completed tasks and a week of failed jobs, 10,000 each', () => {
    expect(retentionFrom(parseEnv({}))).toEqual({
      results: { age: 7 * 86_400, count: 10_000 },
      completed: { age: 86_400, count: 10_000 },
      failed: { age: 7 * 86_400, count: 10_000 },
    });
  });

  it('take seconds and counts, and a bad one is refused by name', () => {
    const env = parseEnv({ RESULTS_KEEP_AGE_S: '3600', TASKS_KEEP_COMPLETED_COUNT: '0' });
    expect(retentionFrom(env)).toMatchObject({ results: { age: 3600 }, completed: { count: 0 } });
    expect(envError({ RESULTS_KEEP_COUNT: '0' }).message).toMatch(/^RESULTS_KEEP_COUNT="0" is invalid/);
    expect(envError({ TASKS_KEEP_FAILED_AGE_S: '7d' }).message).toMatch(/^TASKS_KEEP_FAILED_AGE_S=/);
  });
});

describe('AGENT_MEMORY_WINDOW', () => {
  it('is auto by default, takes auto or a window of 2 to 200 messages, and names itself when bad', () => {
    expect(parseEnv({}).AGENT_MEMORY_WINDOW).toBe('auto');
    expect(parseEnv({ AGENT_MEMORY_WINDOW: 'auto' }).AGENT_MEMORY_WINDOW).toBe('auto');
    expect(parseEnv({ AGENT_MEMORY_WINDOW: '6' }).AGENT_MEMORY_WINDOW).toBe(6);
    expect(parseEnv({ AGENT_CONTEXT_TOKENS: '1000000' }).AGENT_CONTEXT_TOKENS).toBe(1_000_000);
    expect(() => parseEnv({ AGENT_MEMORY_WINDOW: 'big' })).toThrow(/^AGENT_MEMORY_WINDOW="big" is invalid/);
    expect(() => parseEnv({ AGENT_CONTEXT_TOKENS: '10' })).toThrow(/^AGENT_CONTEXT_TOKENS="10" is invalid/);
  });
});
