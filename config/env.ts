// The environment, parsed once with zod. Every variable is optional (docs/configuration.md); a bad value stops the
// process at start with one line that names the variable.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import * as D from '../src/kernel/defaults.js';
import { MODEL_APIS, REASONING_EFFORTS, type ModelApi } from '../src/kernel/chat-model.js';
import { priceFileSchema, priceMapSchema } from './prices.js';
import { ConfigError } from '../src/kernel/errors.js';
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_APPROVAL_TIMEOUT_MS,
  MIN_APPROVAL_TIMEOUT_MS,
} from '../src/kernel/approval.js';
import { isSecretKey, redactUrl } from '../src/logging/redact.js';
import { DEFAULT_RETENTION as R } from '../src/queue/retention.js';
import { apiTokensSchema } from './api-tokens.js';
import {
  assertPrefixFits,
  hostPortsProblem,
  redisTarget,
  type RedisTarget,
} from '../src/queue/redis-target.js';
import { boardApproversSchema } from './board-approvers.js';

/** Plain decimal numbers only: no hex, no exponent, no whitespace read as 0 (as z.coerce would). */
const decimal = (schema: z.ZodNumber) =>
  z.preprocess(
    (value) => (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value),
    schema,
  );
const int = (min: number, max = Number.MAX_SAFE_INTEGER) => decimal(z.number().int().min(min).max(max));
const positive = () => decimal(z.number().positive().finite());
const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        // `scheme://` written out: without the `//` the URL parser takes the rest for a path, so a misspelt
        // `mysql:root:pw@db` would pass, name a database `root:pw@db`, and reach error messages unredacted.
        const protocol = new URL(value).protocol.replace(/:$/, '');
        return protocols.includes(protocol) && value.toLowerCase().startsWith(`${protocol}://`);
      } catch {
        return false;
      }
    },
    `must be a URL (${protocols.join(', ')})`,
  );
const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter(Boolean),
);
/** The first issue of a nested value, with its path: `gpt-x.inputPerMillion: too small…`. */
const firstIssue = (error: z.ZodError): string => {
  const issue = error.issues[0];
  const path = issue?.path.join('.') ?? '';
  return `${path ? `${path}: ` : ''}${issue?.message ?? 'bad value'}`;
};
/** JSON read from a variable (or the file it names) and checked against `schema`, the first issue named. */
const checkedJson = <T extends z.ZodType>(schema: T, read: (value: string) => string, what: string) =>
  z.string().transform((value, ctx): z.output<T> => {
    let json: unknown;
    try {
      json = JSON.parse(read(value));
    } catch (error) {
      const why = error instanceof SyntaxError ? 'is not JSON' : 'cannot be read';
      ctx.addIssue({
        code: 'custom',
        message: what === 'value' ? 'must be JSON' : `the ${what} ${why} (${(error as Error).message})`,
      });
      return z.NEVER;
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    ctx.addIssue({ code: 'custom', message: firstIssue(parsed.error) });
    return z.NEVER;
  });
const priceTable = checkedJson(priceMapSchema, (value) => value, 'value');
// Read once at start, like every other variable: a price file that cannot be read stops the process naming it.
const priceFile = checkedJson(priceFileSchema, (path) => readFileSync(path, 'utf8'), 'file');

/**
 * MODEL_TPM: one number for every model (`90000`), or limits by model with an optional default for the others
 * (`gpt-4.1=30000,gpt-4.1-mini=200000,*=60000`).
 */
const tokenLimits = z.string().transform((value, ctx) => {
  const count = (text: string) => (/^\d+$/.test(text) && Number(text) >= 1 ? Number(text) : undefined);
  const all = count(value);
  if (all !== undefined && Number.isSafeInteger(all)) return { all };
  const byModel: Record<string, number> = {};
  let others: number | undefined;
  for (const item of value.split(',')) {
    const at = item.lastIndexOf('=');
    const model = item.slice(0, at).trim();
    const limit = count(item.slice(at + 1).trim());
    if (at < 1 || model === '' || limit === undefined || !Number.isSafeInteger(limit)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a whole number of tokens, or model=tokens pairs separated by commas (bad: ${JSON.stringify(item.trim())})`,
      });
      return z.NEVER;
    }
    if (model === '*') others = limit;
    else byModel[model] = limit;
  }
  return others === undefined ? { byModel } : { byModel, others };
});

/** An address to listen on: an IPv4 or IPv6 address or a host name, never a URL or a port. */
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const listenHost = z
  .string()
  .refine(
    (value) => isIP(value) !== 0 || (value.length <= 253 && HOST_NAME.test(value)),
    'must be an address such as 127.0.0.1, 0.0.0.0 or ::',
  );

const hostPorts = (value: string, ctx: z.RefinementCtx) => {
  const problem = hostPortsProblem(value);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
};
const pemFile = z.string().transform((path, ctx) => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `the file cannot be read (${(error as Error).message})` });
    return z.NEVER;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    ctx.addIssue({
      code: 'custom',
      message: 'the file holds no PEM certificate (-----BEGIN CERTIFICATE-----)',
    });
    return z.NEVER;
  }
  return text;
});
const QUEUE_PREFIX = /^(?=.)[A-Za-z0-9_.:-]*(?:\{[A-Za-z0-9_.:-]+\}[A-Za-z0-9_.:-]*)?$/;

export const envSchema = z.object({
  REDIS_URL: url(['redis', 'rediss']).default('redis://127.0.0.1:6379'),
  // A Redis Cluster (host:port of some of its nodes) or Sentinel (its sentinels and the master's name) instead of
  // REDIS_URL: src/queue/redis-target.ts.
  REDIS_CLUSTER_NODES: z.string().superRefine(hostPorts).optional(),
  REDIS_SENTINELS: z.string().superRefine(hostPorts).optional(),
  REDIS_SENTINEL_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'letters, digits and _.:- only')
    .optional(),
  // With a cluster or Sentinel only (REDIS_URL carries its own: rediss://user:pass@host; these are then not read):
  // the ACL user and password of the Redis servers, TLS to them, and the sentinels' own user and password.
  REDIS_USERNAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  REDIS_TLS: z.enum(['on', 'off']).default('off'),
  // PEM certificates trusted instead of Node's default CAs; read once at start.
  REDIS_TLS_CA_FILE: pemFile.optional(),
  REDIS_SENTINEL_USERNAME: z.string().optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  // One braced hash tag at most ({agentfleet}, {af}:x): on a cluster it keeps every key of the fleet in one slot.
  QUEUE_PREFIX: z
    .string()
    .refine(
      (value) => value.length <= 64 && QUEUE_PREFIX.test(value),
      'letters, digits and _.:- only (64 at most), with at most one {hash tag} (e.g. {agentfleet})',
    )
    .default('agentfleet'),
  MYSQL_URL: url(['mysql']).default('mysql://root@127.0.0.1:3306/agent_fleet'),
  // A replica of MYSQL_URL for reads that may lag (console, reports, forecasts, trace): src/store/read-pool.ts.
  MYSQL_READ_URL: url(['mysql']).optional(),
  DATA_MYSQL_URL: url(['mysql']).default('mysql://agent_reader:agent_reader@127.0.0.1:3306/agent_fleet_demo'),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: url(['http', 'https']).optional(),
  // Azure OpenAI instead of OpenAI (docs/models.md): the resource's endpoint, its key (sent as `api-key`), the API
  // version, and the deployment (default: the model's name).
  AZURE_OPENAI_ENDPOINT: url(['http', 'https']).optional(),
  AZURE_OPENAI_API_KEY: z.string().min(1).optional(),
  AZURE_OPENAI_API_VERSION: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, 'must be an API version such as 2024-10-21')
    .default('2024-10-21'),
  AZURE_OPENAI_DEPLOYMENT: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be a deployment name')
    .optional(),
  LLM_MODEL: z.string().min(1).default(D.DEFAULT_MODEL),
  LLM_TEMPERATURE: decimal(z.number().min(0).max(2)).default(D.DEFAULT_TEMPERATURE),
  // Unset: 512, or 4,096 for a reasoning model that reasons (src/kernel/defaults.ts); set, every model's.
  LLM_MAX_TOKENS: int(16, 128_000).optional(),
  // `auto`: `none` for a reasoning model that takes it (function tools work over Chat Completions), else the
  // provider's default. An agent's modelSettings.reasoningEffort wins. Never sent to other models.
  // Chat Completions (every OpenAI-compatible endpoint) or the Responses API (OpenAI, Azure OpenAI); an agent's
  // `api` wins.
  LLM_API: z.enum(MODEL_APIS as [ModelApi, ...ModelApi[]]).default('chat'),
  LLM_REASONING_EFFORT: z.enum(['auto', ...REASONING_EFFORTS]).default('auto'),
  LLM_TIMEOUT_MS: int(100).default(D.DEFAULT_MODEL_TIMEOUT_MS),
  // Prices over the built-in table (config/prices.json): a file of the same shape, then this JSON map.
  LLM_PRICES_FILE: priceFile.optional(),
  LLM_PRICES: priceTable.optional(),
  AGENT_PROTOCOL: z.enum(['tools', 'json']).default('tools'),
  AGENT_MAX_STEPS: int(1, 100).default(D.DEFAULT_MAX_STEPS),
  /** How deep agents may call agents: a task is at depth 0, a child it calls at 1 (docs/child-agents.md). */
  AGENT_MAX_DEPTH: int(0, 10).default(3),
  /** Notes across tasks for the built-in `default` agent (docs/notes.md); an agent of one's own: its `notes`. */
  AGENT_NOTES: z.enum(['on', 'off']).default('off'),
  /**
   * Notes looked up and kept by embedding similarity through the model endpoint's `/v1/embeddings`, billed to the run
   * (docs/notes.md); unset, FULLTEXT search. Priced in config/prices.json's `embeddingModels` (or LLM_PRICES_FILE's).
   */
  NOTES_EMBEDDING_MODEL: z
    .string()
    .regex(/^[A-Za-z0-9._:/-]{1,200}$/, 'must be a model name')
    .optional(),
  AGENT_MAX_TOKENS: int(100, 10_000_000).default(D.DEFAULT_MAX_TOKENS),
  AGENT_MAX_COST_USD: decimal(z.number().positive().max(1000)).default(D.DEFAULT_MAX_COST_USD),
  AGENT_DEADLINE_MS: int(1000, 86_400_000).default(D.DEFAULT_DEADLINE_MS),
  // `auto` (default): the cache-aware memory; a number forces the sliding window of that many messages.
  AGENT_MEMORY_WINDOW: z.union([z.literal('auto'), int(2, 200)]).default(D.DEFAULT_MEMORY_WINDOW),
  // The model's context window in tokens: the auto memory compacts the prompt before it reaches 80 % of it.
  AGENT_CONTEXT_TOKENS: int(1_000, 10_000_000).default(D.DEFAULT_CONTEXT_TOKENS),
  /** How long a call may wait for a person's decision before it expires (docs/approvals.md). */
  APPROVAL_TIMEOUT_MS: int(MIN_APPROVAL_TIMEOUT_MS, MAX_APPROVAL_TIMEOUT_MS).default(
    DEFAULT_APPROVAL_TIMEOUT_MS,
  ),
  AGENT_TOOL_RESULT_MAX_TOKENS: int(50, 100_000).default(D.DEFAULT_TOOL_RESULT_MAX_TOKENS),
  // Up to 10,000: a latency-bound worker holds thousands of jobs in flight (docs/benchmarks.md, 2,000 measured).
  WORKER_CONCURRENCY: int(1, 10_000).default(10),
  WORKER_LOCK_DURATION_MS: int(1_000).default(60_000),
  WORKER_STALLED_INTERVAL_MS: int(500).default(30_000),
  // A job whose worker died under it more often than this is failed (with its record and result), not run again.
  WORKER_MAX_STALLED_COUNT: int(0, 1_000).default(2),
  WORKER_SHUTDOWN_GRACE_MS: int(0).default(25_000),
  // After an infrastructure failure: waits of base · 2^(n−1), capped (src/queue/retry-schedule.ts).
  WORKER_RETRY_BASE_MS: int(10, 3_600_000).default(5_000),
  WORKER_RETRY_MAX_MS: int(10, 3_600_000).default(60_000),
  // Retention of finished jobs in Redis (src/queue/retention.ts): seconds, and how many are kept.
  RESULTS_KEEP_AGE_S: int(1).default(R.RESULTS_KEEP_AGE_S),
  RESULTS_KEEP_COUNT: int(1).default(R.RESULTS_KEEP_COUNT),
  TASKS_KEEP_COMPLETED_AGE_S: int(1).default(R.TASKS_KEEP_COMPLETED_AGE_S),
  TASKS_KEEP_COMPLETED_COUNT: int(0).default(R.TASKS_KEEP_COMPLETED_COUNT),
  TASKS_KEEP_FAILED_AGE_S: int(1).default(R.TASKS_KEEP_FAILED_AGE_S),
  TASKS_KEEP_FAILED_COUNT: int(0).default(R.TASKS_KEEP_FAILED_COUNT),
  SMTP_URL: url(['smtp', 'smtps']).default('smtp://127.0.0.1:1025'),
  SMTP_LOOKUP_URL: url(['http', 'https']).optional(),
  // send_email's pooled connections (src/tools/smtp-pool.ts): at most this many open, this many sends waiting.
  SMTP_MAX_CONNECTIONS: int(1, 100).default(5),
  SMTP_MAX_QUEUED: int(1, 100_000).default(1_000),
  EMAIL_PENDING_GRACE_MS: int(0).default(120_000),
  // Retention in MySQL (src/store/retention): step traces and settled effects, and runs (0 keeps them forever).
  STORE_KEEP_STEPS_DAYS: int(1, 36_500).default(30),
  STORE_KEEP_RUNS_DAYS: int(0, 36_500).default(400),
  // How often each worker tries to sweep the store (one of them sweeps): 1 s to a week.
  STORE_SWEEP_INTERVAL_MS: int(1_000, 604_800_000).default(3_600_000),
  // The effect sweeper's interval (every tool's pending effects).
  EFFECT_SWEEP_INTERVAL_MS: int(0).default(60_000),
  EMAIL_DRY_RUN: z
    .enum(['0', '1', 'true', 'false'])
    .transform((v) => v === '1' || v === 'true')
    .default(false),
  EMAIL_FROM: z.email().default('reports@agent-fleet.local'),
  EMAIL_ALLOWED_DOMAINS: commaList.default(['example.com']),
  EMAIL_MAX_PER_RUN: int(0, 1000).default(10),
  SQL_MAX_ROWS: int(1, 1_000).default(10),
  SQL_TIMEOUT_MS: int(100, 600_000).default(5_000),
  SQL_ALLOWED_TABLES: commaList.optional(),
  API_HOST: listenHost.default('127.0.0.1'),
  SQL_MAX_RESULT_BYTES: int(1_024, 1_073_741_824).default(1_048_576),
  API_PORT: int(0, 65535).default(3100),
  API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  // Named tokens, `name:token,…`: who called is the token's name (config/api-tokens.ts).
  API_TOKENS: apiTokensSchema.optional(),
  BOARD_HOST: listenHost.default('127.0.0.1'),
  BOARD_PORT: int(0, 65535).default(3200),
  BOARD_USER: z.string().min(1).optional(),
  BOARD_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  // The board's admin login (add, retry, clean, obliterate…): off unless both are set.
  BOARD_ADMIN_USER: z.string().min(1).optional(),
  BOARD_ADMIN_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
  // Logins that may decide approvals in the run console, `name:password,…` (config/board-approvers.ts).
  BOARD_APPROVERS: boardApproversSchema.optional(),
  // The board's address as the browser sees it (behind a proxy that rewrites Host); default: the Host header.
  BOARD_ORIGIN: z
    .string()
    .refine((value) => {
      try {
        return new URL(value).origin === value;
      } catch {
        return false;
      }
    }, 'must be an origin such as https://board.example.com (scheme, host and port only)')
    .optional(),
  FLEET_DAILY_MAX_COST_USD: positive().optional(),
  FLEET_DAILY_MAX_TOKENS: int(1).optional(),
  MODEL_RPM: int(1).optional(),
  MODEL_TPM: tokenLimits.optional(),
  // Per tenant (a task's `tenant`): jobs running at once, and spend per UTC day, across all workers.
  TENANT_CONCURRENCY: int(1, 100_000).optional(),
  TENANT_DAILY_MAX_COST_USD: positive().optional(),
  TENANT_DAILY_MAX_TOKENS: int(1).optional(),
  METRICS_HOST: listenHost.default('127.0.0.1'),
  METRICS_PORT: int(0, 65535).default(9464),
  /** Workers on one host sharing METRICS_PORT take the next free port, up to this many from it. */
  METRICS_PORT_SPAN: int(1, 1000).default(16),
  SCHEDULES_FILE: z.string().min(1).default('config/schedules.json'),
  /** The fleet configuration module (docs/agents-and-tools.md); unset: agent-fleet.config.ts/.js, else the demo. */
  FLEET_CONFIG: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = z.infer<typeof envSchema>;

/** Parses the environment; throws a ConfigError whose message names the first bad variable. */
/** Variables that were renamed: one still set is refused, naming the new one, rather than silently ignored. */
const RENAMED: Readonly<Record<string, string>> = { EMAIL_SWEEP_INTERVAL_MS: 'EFFECT_SWEEP_INTERVAL_MS' };

/** Secrets whose names isSecretKey does not recognise as such. */
const SECRET_VARIABLES: ReadonlySet<string> = new Set(['API_TOKENS', 'BOARD_APPROVERS']);

export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  // An empty or blank variable means "not set", as it does in most shells' `VAR= cmd`.
  const present = Object.fromEntries(
    Object.entries(source)
      .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1].trim() !== '')
      .map(([key, value]) => [key, value.trim()]),
  );
  for (const [old, now] of Object.entries(RENAMED)) {
    if (present[old] !== undefined) {
      throw new ConfigError('bad_env', `${old} was renamed ${now}: set ${now} instead`);
    }
  }
  const parsed = envSchema.safeParse(present);
  if (parsed.success) {
    // The settings that only make sense together: a cluster or Sentinel, and a prefix a cluster can take.
    assertPrefixFits(redisTargetOf(parsed.data), parsed.data.QUEUE_PREFIX);
    assertEffectsOutliveFailedTasks(parsed.data);
    return parsed.data;
  }
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? 'environment');
  // API_TOKEN, BOARD_PASSWORD, OPENAI_API_KEY…; not AGENT_MAX_TOKENS, whose value is worth showing. API_TOKENS
  // reads like a count to isSecretKey (`tokens`) but holds tokens.
  const hidden = isSecretKey(name) || SECRET_VARIABLES.has(name);
  const shown = hidden ? '(hidden)' : JSON.stringify(redactUrl(present[name]));
  throw new ConfigError('bad_env', `${name}=${shown} is invalid: ${issue?.message ?? 'bad value'}`);
}

/**
 * The store sweeper deletes the records of settled effects after STORE_KEEP_STEPS_DAYS, while a failed task stays
 * in Redis, where an operator may retry it, for TASKS_KEEP_FAILED_AGE_S. Retried after its records were gone, a
 * task would make its effects again (an email sent twice): the steps must be kept at least as long.
 */
function assertEffectsOutliveFailedTasks(env: Env): void {
  const failedDays = env.TASKS_KEEP_FAILED_AGE_S / 86_400;
  if (env.STORE_KEEP_STEPS_DAYS >= failedDays) return;
  throw new ConfigError(
    'bad_env',
    `STORE_KEEP_STEPS_DAYS=${env.STORE_KEEP_STEPS_DAYS} deletes the records of a task's effects while a failed ` +
      `task stays retryable in Redis (TASKS_KEEP_FAILED_AGE_S=${env.TASKS_KEEP_FAILED_AGE_S}, ` +
      `${Number(failedDays.toFixed(2))} days): retried after that, it would make them again. Keep the steps at ` +
      `least ${Math.ceil(failedDays)} days, or failed tasks less long`,
  );
}

// One owner for what counts as a secret and how a URL's password is hidden: src/logging/redact.ts. A bad
// MYSQL_URL whose password holds an unencoded `/` is the case `new URL` cannot take apart, and still hidden.
export { redactUrl };

/** The Redis every process of the fleet uses: REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS. */
export function redisTargetOf(env: Env): RedisTarget {
  return redisTarget({
    url: env.REDIS_URL,
    clusterNodes: env.REDIS_CLUSTER_NODES,
    sentinels: env.REDIS_SENTINELS,
    sentinelName: env.REDIS_SENTINEL_NAME,
    ...redisAccessOf(env),
  });
}

function redisAccessOf(env: Env) {
  return {
    username: env.REDIS_USERNAME,
    password: env.REDIS_PASSWORD,
    tls: env.REDIS_TLS === 'on',
    tlsCa: env.REDIS_TLS_CA_FILE,
    sentinelUsername: env.REDIS_SENTINEL_USERNAME,
    sentinelPassword: env.REDIS_SENTINEL_PASSWORD,
  };
}

/** The same, as FleetClient's options: what a process hands the client library it opens. */
export function redisClientOptionsOf(env: Env): {
  redisUrl: string;
  redisClusterNodes?: string;
  redisSentinels?: string;
  redisSentinelName?: string;
  redisUsername?: string;
  redisPassword?: string;
  redisTls: boolean;
  redisTlsCa?: string;
  redisSentinelUsername?: string;
  redisSentinelPassword?: string;
} {
  const access = redisAccessOf(env);
  return {
    redisUrl: env.REDIS_URL,
    redisClusterNodes: env.REDIS_CLUSTER_NODES,
    redisSentinels: env.REDIS_SENTINELS,
    redisSentinelName: env.REDIS_SENTINEL_NAME,
    redisUsername: access.username,
    redisPassword: access.password,
    redisTls: access.tls,
    redisTlsCa: access.tlsCa,
    redisSentinelUsername: access.sentinelUsername,
    redisSentinelPassword: access.sentinelPassword,
  };
}

let cached: Env | undefined;

/** The process's environment, parsed on first use. Entry points call it at start so a bad value fails fast. */
export function env(): Env {
  cached ??= parseEnv();
  return cached;
}
