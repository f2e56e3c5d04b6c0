// The producer CLI's pure half: argv → the task to enqueue, and progress → one human line.
// No I/O here, so every flag is unit-testable. Range checks are the task schema's job (the client validates
// before enqueue); this file only refuses what is not even a number, and names the flag when it does.
import { parseArgs } from 'node:util';
import { InputError } from '../src/kernel/errors.js';

export const CLI_USAGE =
  'usage: npm run enqueue -- --task "…" [--agent NAME] [--input JSON] [--max-steps N] [--max-tokens N] [--max-cost USD] [--tools a,b] ' +
  '[--model M] [--protocol tools|json] [--metadata k=v]... [--tenant T] [--idempotency-key K] [--wait] [--timeout SECONDS]\n' +
  '       npm run enqueue -- --batch tasks.jsonl [--batch-max-cost USD | --max-cost-from-forecast p50|p90 ' +
  '[--if-no-history refuse|worst-case]] [--batch-max-tokens N] [--batch-name NAME] [--forecast | --wait [--timeout SECONDS]]\n' +
  '       npm run enqueue -- --list-agents\n' +
  '       npm run enqueue -- --cancel JOB_ID [--wait [--timeout SECONDS]]';

/** A command line the CLI cannot run: exit 2 with the usage line. */
export class CliArgsError extends InputError {
  constructor(message: string) {
    super('bad_arguments', message);
  }
}

/** What the command line asks for. */
export type CliCommand =
  | { mode: 'help' }
  | { mode: 'list-agents' }
  | {
      mode: 'cancel';
      /** The task to cancel (docs/cancelling.md). */
      jobId: string;
      /** --wait: follow it to its (cancelled) result. */
      wait: boolean;
      timeoutMs: number | undefined;
    }
  | {
      mode: 'batch';
      /** The JSONL file of tasks, one per line. */
      file: string;
      budget: { maxCostUsd?: number; maxTokens?: number };
      name: string | undefined;
      /** --forecast: print the forecast, enqueue nothing. */
      forecast: boolean;
      /** --max-cost-from-forecast: the batch's maxCostUsd from the forecast at this quantile. */
      maxCostFromForecast: 'p50' | 'p90' | undefined;
      ifNoHistory: 'refuse' | 'worst-case' | undefined;
      wait: boolean;
      timeoutMs: number | undefined;
    }
  | {
      mode: 'task';
      /** Not validated yet: FleetClient.enqueue validates it (and refuses it with field paths). */
      task: Record<string, unknown>;
      wait: boolean;
      /** Only with --wait; undefined waits without limit. */
      timeoutMs: number | undefined;
    };

const OPTIONS = {
  task: { type: 'string' },
  agent: { type: 'string' },
  input: { type: 'string' },
  'list-agents': { type: 'boolean' },
  'max-steps': { type: 'string' },
  'max-tokens': { type: 'string' },
  'max-cost': { type: 'string' },
  tools: { type: 'string' },
  model: { type: 'string' },
  protocol: { type: 'string' },
  metadata: { type: 'string', multiple: true },
  tenant: { type: 'string' },
  'idempotency-key': { type: 'string' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  batch: { type: 'string' },
  'batch-max-cost': { type: 'string' },
  'batch-max-tokens': { type: 'string' },
  'batch-name': { type: 'string' },
  forecast: { type: 'boolean' },
  'max-cost-from-forecast': { type: 'string' },
  'if-no-history': { type: 'string' },
  cancel: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const TASK_ONLY = [
  'task',
  'agent',
  'input',
  'max-steps',
  'max-tokens',
  'max-cost',
  'tools',
  'model',
  'protocol',
  'metadata',
  'tenant',
  'idempotency-key',
];
const BATCH_ONLY = [
  'batch-max-cost',
  'batch-max-tokens',
  'batch-name',
  'forecast',
  'max-cost-from-forecast',
  'if-no-history',
];

/** Task field path → the flag that sets it, so a schema error can name the flag too. */
export const FLAG_FOR_PATH: Readonly<Record<string, string>> = {
  task: '--task',
  agent: '--agent',
  input: '--input',
  'budget.maxSteps': '--max-steps',
  'budget.maxTokens': '--max-tokens',
  'budget.maxCostUsd': '--max-cost',
  tools: '--tools',
  model: '--model',
  protocol: '--protocol',
  metadata: '--metadata',
  tenant: '--tenant',
  idempotencyKey: '--idempotency-key',
};

/** The flag behind a field path (`tools.1` → `--tools`), or undefined. */
export function flagForPath(path: string): string | undefined {
  const parts = path.split('.');
  for (let length = parts.length; length > 0; length--) {
    const flag = FLAG_FOR_PATH[parts.slice(0, length).join('.')];
    if (flag) return flag;
  }
  return undefined;
}

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

function integerFlag(flag: string, value: string): number {
  const number = Number(value.trim());
  if (!INTEGER.test(value.trim()) || !Number.isSafeInteger(number)) {
    throw new CliArgsError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  }
  return number;
}

function decimalFlag(flag: string, value: string): number {
  const number = Number(value.trim());
  if (!DECIMAL.test(value.trim()) || !Number.isFinite(number)) {
    throw new CliArgsError(`${flag} must be a number, got ${JSON.stringify(value)}`);
  }
  return number;
}

function jsonFlag(flag: string, value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new CliArgsError(`${flag} must be JSON, e.g. '{"region": "EU"}'`);
  }
}

function metadataFlag(pairs: readonly string[]): Record<string, string> {
  const entries = new Map<string, string>();
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = at === -1 ? '' : pair.slice(0, at).trim();
    if (!key) throw new CliArgsError(`--metadata must be key=value, got ${JSON.stringify(pair)}`);
    if (entries.has(key)) throw new CliArgsError(`--metadata repeats the key ${JSON.stringify(key)}`);
    entries.set(key, pair.slice(at + 1));
  }
  // fromEntries defines own properties, so a key such as `__proto__` stays data (and the schema judges it).
  return Object.fromEntries(entries);
}

function parseError(error: unknown): CliArgsError {
  const message = error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
  return new CliArgsError(message.replace(/^Unknown option '([^']+)'.*$/, 'unknown option $1'));
}

function parseStrict(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      options: OPTIONS,
      strict: true,
      allowPositionals: false,
      tokens: true,
    });
  } catch (error) {
    throw parseError(error);
  }
}

/** argv (without node and the script) → the command. Throws CliArgsError on anything it cannot run. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  const { values, tokens } = parseStrict(argv);
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === 'metadata') continue;
    if (seen.has(token.name)) throw new CliArgsError(`--${token.name} is given more than once`);
    seen.add(token.name);
  }
  if (values.help) return { mode: 'help' };
  if (values['list-agents']) return { mode: 'list-agents' };
  const wait = values.wait === true;
  const timeoutMs = timeoutFlag(values.timeout, wait);
  if (values.cancel !== undefined) {
    const other = [...seen].find((name) => !['cancel', 'wait', 'timeout'].includes(name));
    if (other) throw new CliArgsError(`--${other} cannot go with --cancel: it names a task enqueued already`);
    if (values.cancel.trim() === '') throw new CliArgsError('--cancel needs the job id of a task');
    return { mode: 'cancel', jobId: values.cancel, wait, timeoutMs };
  }
  if (values.batch !== undefined) {
    const mixed = TASK_ONLY.find((name) => seen.has(name));
    if (mixed)
      throw new CliArgsError(`--${mixed} cannot go with --batch: each line of the file is a whole task`);
    const budget: { maxCostUsd?: number; maxTokens?: number } = {};
    if (values['batch-max-cost'] !== undefined) {
      budget.maxCostUsd = decimalFlag('--batch-max-cost', values['batch-max-cost']);
    }
    if (values['batch-max-tokens'] !== undefined) {
      budget.maxTokens = integerFlag('--batch-max-tokens', values['batch-max-tokens']);
    }
    return {
      mode: 'batch',
      file: values.batch,
      budget,
      name: values['batch-name'],
      ...forecastFlags(values, seen),
      wait,
      timeoutMs,
    };
  }
  const batchFlag = BATCH_ONLY.find((name) => seen.has(name));
  if (batchFlag) throw new CliArgsError(`--${batchFlag} needs --batch`);
  if (values.task === undefined && values.input === undefined) {
    throw new CliArgsError('--task, --input or --batch is required');
  }

  const budget: Record<string, number> = {};
  if (values['max-steps'] !== undefined) budget['maxSteps'] = integerFlag('--max-steps', values['max-steps']);
  if (values['max-tokens'] !== undefined)
    budget['maxTokens'] = integerFlag('--max-tokens', values['max-tokens']);
  if (values['max-cost'] !== undefined) budget['maxCostUsd'] = decimalFlag('--max-cost', values['max-cost']);

  const task: Record<string, unknown> = values.task === undefined ? {} : { task: values.task };
  if (values.agent !== undefined) task['agent'] = values.agent;
  if (values.input !== undefined) task['input'] = jsonFlag('--input', values.input);
  if (Object.keys(budget).length > 0) task['budget'] = budget;
  if (values.tools !== undefined) {
    task['tools'] = values.tools
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean);
  }
  if (values.model !== undefined) task['model'] = values.model;
  if (values.protocol !== undefined) task['protocol'] = values.protocol;
  if (values.metadata !== undefined) task['metadata'] = metadataFlag(values.metadata);
  if (values.tenant !== undefined) task['tenant'] = values.tenant;
  if (values['idempotency-key'] !== undefined) task['idempotencyKey'] = values['idempotency-key'];

  return { mode: 'task', task, wait, timeoutMs };
}

function forecastFlags(
  values: { forecast?: boolean; 'max-cost-from-forecast'?: string; 'if-no-history'?: string },
  seen: ReadonlySet<string>,
): Pick<Extract<CliCommand, { mode: 'batch' }>, 'forecast' | 'maxCostFromForecast' | 'ifNoHistory'> {
  const forecast = values.forecast === true;
  if (forecast && seen.has('wait')) {
    throw new CliArgsError('--wait cannot go with --forecast: a forecast enqueues nothing');
  }
  const quantile = values['max-cost-from-forecast'];
  if (quantile !== undefined && quantile !== 'p50' && quantile !== 'p90') {
    throw new CliArgsError(`--max-cost-from-forecast must be p50 or p90, got ${JSON.stringify(quantile)}`);
  }
  if (quantile !== undefined && seen.has('batch-max-cost')) {
    throw new CliArgsError(
      '--max-cost-from-forecast and --batch-max-cost both set the batch budget: give one',
    );
  }
  const ifNoHistory = values['if-no-history'];
  if (ifNoHistory !== undefined && quantile === undefined) {
    throw new CliArgsError('--if-no-history needs --max-cost-from-forecast');
  }
  if (ifNoHistory !== undefined && ifNoHistory !== 'refuse' && ifNoHistory !== 'worst-case') {
    throw new CliArgsError(
      `--if-no-history must be refuse or worst-case, got ${JSON.stringify(ifNoHistory)}`,
    );
  }
  return { forecast, maxCostFromForecast: quantile, ifNoHistory };
}

function timeoutFlag(value: string | undefined, wait: boolean): number | undefined {
  if (value === undefined) return undefined;
  if (!wait) throw new CliArgsError('--timeout needs --wait');
  const seconds = decimalFlag('--timeout', value);
  if (!(seconds > 0)) throw new CliArgsError(`--timeout must be more than 0 seconds, got ${value}`);
  return Math.round(seconds * 1000);
}

const numberFormat = new Intl.NumberFormat('en-US');

function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * One human line for a progress change: `job 42: step 3/8 · 2,140 tokens · $0.0241 · 5 tool calls`.
 * The worker reports `{step, maxSteps, totalTokens, costUsd, toolCalls}`; any other shape still gets a line.
 */
export function formatProgress(jobId: string, progress: unknown): string {
  const prefix = `job ${jobId}:`;
  if (progress === null || progress === undefined || progress === 0 || progress === '') {
    return `${prefix} no progress yet`;
  }
  if (typeof progress === 'number') return `${prefix} progress ${numberFormat.format(progress)}`;
  if (typeof progress !== 'object' || Array.isArray(progress)) {
    return `${prefix} ${truncate(typeof progress === 'string' ? progress : JSON.stringify(progress))}`;
  }
  const fields = progress as Record<string, unknown>;
  const parts: string[] = [];
  const step = finite(fields['step']);
  const maxSteps = finite(fields['maxSteps']);
  if (step !== undefined) parts.push(maxSteps === undefined ? `step ${step}` : `step ${step}/${maxSteps}`);
  const tokens = finite(fields['totalTokens']);
  if (tokens !== undefined) parts.push(`${numberFormat.format(tokens)} tokens`);
  const cost = finite(fields['costUsd']);
  if (cost !== undefined) parts.push(`$${cost.toFixed(4)}`);
  const toolCalls = finite(fields['toolCalls']);
  if (toolCalls !== undefined) parts.push(`${toolCalls} tool call${toolCalls === 1 ? '' : 's'}`);
  if (parts.length === 0) return `${prefix} ${truncate(JSON.stringify(progress))}`;
  return `${prefix} ${parts.join(' · ')}`;
}

function truncate(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
