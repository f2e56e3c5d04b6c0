// The command line of `npm run approvals`, parsed: pure, so every refusal (which names its flag) is tested without
// a process. What a decision may be is the desk's to say; this only reads what was typed.
import { parseSubcommand } from '../util/subcommand-args.js';
import { APPROVAL_STATES } from './approval.js';
import type { ApprovalFilter } from './approval-store.js';

export const APPROVALS_USAGE = `usage: npm run approvals -- <command>
  list [--state pending|approved|rejected|expired] [--job ID] [--batch ID] [--tool T] [--limit N] [--json]
  show ID
  approve ID [--arguments '{"to":"…"}'] [--reason "…"] [--json]
  reject ID --reason "…" [--json]
  approve --batch B --tool T [--reason "…"] [--json]     every waiting call of the batch to tool T
  reject --batch B --tool T --reason "…" [--json]`;

export type ApprovalsArgs =
  | { kind: 'help' }
  | { kind: 'error'; message: string }
  | { kind: 'list'; filter: ApprovalFilter; json: boolean }
  | { kind: 'show'; id: string }
  | {
      kind: 'decide';
      id: string;
      decision: 'approve' | 'reject';
      reason?: string;
      arguments?: Record<string, unknown>;
      json: boolean;
    }
  | {
      kind: 'decide-batch';
      batchId: string;
      tool: string;
      decision: 'approve' | 'reject';
      reason?: string;
      json: boolean;
    };

/** Job and batch ids are VARCHAR(64) of printable ASCII; approval ids `apr_` and 32 hex digits. */
const ID = /^[\x20-\x7e]{1,64}$/;
const APPROVAL_ID = /^[\x21-\x7e]{1,40}$/;

type Values = {
  state?: string | undefined;
  job?: string | undefined;
  batch?: string | undefined;
  tool?: string | undefined;
  limit?: string | undefined;
  json?: boolean | undefined;
  arguments?: string | undefined;
  reason?: string | undefined;
  help?: boolean | undefined;
};

const OPTIONS = {
  state: { type: 'string' },
  job: { type: 'string' },
  batch: { type: 'string' },
  tool: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  arguments: { type: 'string' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The flags each command takes; any other is refused by name. */
const ALLOWED: Record<string, readonly (keyof Values)[]> = {
  list: ['state', 'job', 'batch', 'tool', 'limit', 'json'],
  show: [],
  approve: ['arguments', 'reason', 'batch', 'tool', 'json'],
  reject: ['reason', 'batch', 'tool', 'json'],
};

export function parseApprovalsArgs(argv: readonly string[]): ApprovalsArgs {
  const parsed = parseSubcommand<Values>(
    argv,
    OPTIONS,
    ALLOWED,
    'a command is needed: list, show, approve or reject',
  );
  if (parsed.kind !== 'command') return parsed;
  const { command, rest, values } = parsed;
  if (command === 'list') return rest.length > 0 ? extra(command, rest) : parseList(values);
  if (command === 'show') {
    if (rest.length !== 1) return { kind: 'error', message: 'show takes one approval id' };
    return approvalId(rest[0]!) ?? { kind: 'show', id: rest[0]! };
  }
  return parseDecision(command as 'approve' | 'reject', rest, values);
}

function parseList(values: Values): ApprovalsArgs {
  const filter: ApprovalFilter = {};
  if (values.state !== undefined) {
    const state = APPROVAL_STATES.find((s) => s === values.state);
    if (!state) return { kind: 'error', message: `--state must be one of ${APPROVAL_STATES.join(', ')}` };
    filter.state = state;
  }
  for (const [flag, key] of [
    ['job', 'jobId'],
    ['batch', 'batchId'],
    ['tool', 'tool'],
  ] as const) {
    const value = values[flag];
    if (value === undefined) continue;
    if (!ID.test(value))
      return { kind: 'error', message: `--${flag} must be 1-64 printable ASCII characters` };
    filter[key] = value;
  }
  if (values.limit !== undefined) {
    const limit = /^\d{1,4}$/.test(values.limit) ? Number(values.limit) : NaN;
    if (!(limit >= 1 && limit <= 1000))
      return { kind: 'error', message: '--limit must be a whole number from 1 to 1000' };
    filter.limit = limit;
  }
  return { kind: 'list', filter, json: values.json ?? false };
}

function parseDecision(decision: 'approve' | 'reject', rest: string[], values: Values): ApprovalsArgs {
  const json = values.json ?? false;
  if (decision === 'reject' && !values.reason)
    return { kind: 'error', message: '--reason is required to reject (the model is told it)' };
  const reason = values.reason === undefined ? {} : { reason: values.reason };
  if (values.batch !== undefined || values.tool !== undefined) {
    if (rest.length > 0)
      return { kind: 'error', message: `${decision} takes an approval id or --batch with --tool, not both` };
    if (!values.batch || !ID.test(values.batch))
      return { kind: 'error', message: '--batch must be 1-64 printable ASCII characters (with --tool)' };
    if (!values.tool || !ID.test(values.tool))
      return { kind: 'error', message: '--tool must name the tool whose calls are decided (with --batch)' };
    if (values.arguments !== undefined)
      return { kind: 'error', message: '--arguments edits one call: not with --batch' };
    return { kind: 'decide-batch', batchId: values.batch, tool: values.tool, decision, ...reason, json };
  }
  if (rest.length !== 1)
    return { kind: 'error', message: `${decision} takes one approval id (or --batch B --tool T)` };
  const id = rest[0]!;
  const bad = approvalId(id);
  if (bad) return bad;
  if (values.arguments === undefined) return { kind: 'decide', id, decision, ...reason, json };
  const edited = parseObject(values.arguments);
  if (typeof edited === 'string') return { kind: 'error', message: `--arguments ${edited}` };
  return { kind: 'decide', id, decision, ...reason, arguments: edited, json };
}

function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `is not JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be a JSON object';
  return value as Record<string, unknown>;
}

function approvalId(id: string): ApprovalsArgs | undefined {
  return APPROVAL_ID.test(id)
    ? undefined
    : { kind: 'error', message: `${JSON.stringify(id)} is not an approval id` };
}

function extra(command: string, rest: string[]): ApprovalsArgs {
  return {
    kind: 'error',
    message: `${command} takes no argument ${JSON.stringify(rest[0])} (flags: --state, --job, …)`,
  };
}
