// Runs one tool call the model asked for and turns every outcome, including refusals and failures, into an
// observation the model can act on. Nothing here throws: a failing tool never crashes the run.
import type { z } from 'zod';
import { TOOL_OUTPUT_MAX_CHARS } from './defaults.js';
import { ToolError } from './errors.js';
import { sleep } from './sleep.js';
import type { UncertainEffect } from './uncertain-effect.js';
import { effectsInFlight, type EffectsInFlight } from './effects-in-flight.js';
import { truncateChars } from './truncate.js';
import { boundedJson } from './bounded-json.js';
import { withTimeout } from '../util/with-timeout.js';
import type { ToolRegistry } from './tool-registry.js';
import { UncertainOutcome, type ToolContext } from './tool.js';

export interface ToolRunOptions {
  /** Per-call limit when the tool sets none. */
  defaultTimeoutMs: number;
  /** How many times a transient failure is tried again inside the call. */
  transientRetries: number;
  /** First backoff delay; doubled on each retry, with jitter. */
  retryBaseDelayMs: number;
  /** Where calls with side effects are tracked until they settle. Default: the process's registry. */
  effects?: EffectsInFlight;
  /** Characters of an outcome's output, whatever the tool returned or threw. Default TOOL_OUTPUT_MAX_CHARS. */
  maxOutputChars?: number;
}

export interface ToolCallOutcome {
  ok: boolean;
  /**
   * What the tool returned, rendered as text, or why the call was refused or failed: at most maxOutputChars
   * (then marked as cut), not yet cut to the model's token limit.
   */
  output: string;
  /** A machine-readable reason when not ok: unknown_tool, invalid_arguments, timeout, aborted, or the tool's. */
  errorCode?: string;
  /**
   * The call failed because something it depends on is unreachable (a transient ToolError that outlasted the
   * retries: a database connection refused, SMTP down), not because of what the model asked.
   */
  infrastructure?: boolean;
  attempts: number;
  latencyMs: number;
  /** The call's side effect may or may not have happened (the tool returned an UncertainOutcome). */
  uncertain?: UncertainEffect;
}

export interface ProposedCall {
  name: string;
  /** Parsed arguments, or the reason they could not be parsed. */
  args: { ok: true; value: unknown } | { ok: false; reason: string };
}

export async function runToolCall(
  registry: ToolRegistry,
  call: ProposedCall,
  ctx: Omit<ToolContext, 'once'> & Partial<Pick<ToolContext, 'once'>>,
  options: ToolRunOptions,
  now: () => number = Date.now,
): Promise<ToolCallOutcome> {
  const started = now();
  const maxChars = options.maxOutputChars ?? TOOL_OUTPUT_MAX_CHARS;
  // Every output passes here, so none goes further unbounded: a result, an error's message, a list of names.
  const done = (fields: Omit<ToolCallOutcome, 'latencyMs'>): ToolCallOutcome => ({
    ...fields,
    output: truncateChars(fields.output, maxChars),
    latencyMs: now() - started,
  });

  const tool = registry.get(call.name);
  if (!tool) {
    return done({
      ok: false,
      errorCode: 'unknown_tool',
      output: `Unknown tool "${call.name}". Available tools: ${registry.names.join(', ') || '(none)'}.`,
      attempts: 0,
    });
  }
  if (!call.args.ok) {
    return done({
      ok: false,
      errorCode: 'invalid_arguments',
      output: `Arguments for ${tool.name} are not valid JSON: ${call.args.reason}`,
      attempts: 0,
    });
  }
  const parsed = tool.parameters.safeParse(call.args.value ?? {});
  if (!parsed.success) {
    return done({
      ok: false,
      errorCode: 'invalid_arguments',
      output: `Invalid arguments for ${tool.name}: ${formatIssues(parsed.error.issues)}`,
      attempts: 0,
    });
  }

  const timeoutMs = tool.timeoutMs ?? options.defaultTimeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await withTimeout(
        (signal) => {
          const work = tool.execute(parsed.data, { once: bareOnce(signal), ...ctx, signal });
          // Waiting may stop (a cancel, the timeout); a side effect already started still runs to its end
          // and records its outcome, and the process waits for it before exiting.
          return tool.readOnly === true ? work : (options.effects ?? effectsInFlight).track(work);
        },
        timeoutMs,
        { signal: ctx.signal, timedOut: () => new CallTimeout() },
      );
      if (value instanceof UncertainOutcome) {
        const uncertain = { tool: tool.name, callKey: ctx.callKey, ...value.effect };
        return done({ ok: true, output: render(value.observation, maxChars), attempts: attempt, uncertain });
      }
      return done({ ok: true, output: render(value, maxChars), attempts: attempt });
    } catch (error) {
      // Stopped waiting for a call that may have side effects: it may still take effect.
      const unknown = (why: string) =>
        tool.readOnly === true
          ? {}
          : { uncertain: { tool: tool.name, callKey: ctx.callKey, what: `${tool.name} call`, why } };
      if (ctx.signal.aborted) {
        return done({
          ok: false,
          errorCode: 'aborted',
          output: `${tool.name} was interrupted.`,
          attempts: attempt,
          ...unknown('the call was interrupted before it finished'),
        });
      }
      if (error instanceof CallTimeout) {
        return done({
          ok: false,
          errorCode: 'timeout',
          output: `${tool.name} timed out after ${timeoutMs} ms.`,
          attempts: attempt,
          ...unknown(`the call timed out after ${timeoutMs} ms`),
        });
      }
      const transient = error instanceof ToolError && error.transient;
      if (transient && attempt <= options.transientRetries) {
        const delay = options.retryBaseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
        try {
          await sleep(delay, ctx.signal);
        } catch {
          return done({
            ok: false,
            errorCode: 'aborted',
            output: `${tool.name} was interrupted.`,
            attempts: attempt,
          });
        }
        continue;
      }
      const message = error instanceof Error ? error.message : String(error);
      const code = error instanceof ToolError ? error.code : 'tool_failed';
      const tries = attempt > 1 ? ` (after ${attempt} attempts)` : '';
      return done({
        ok: false,
        errorCode: code,
        // The tool message answers its call by id: the tool's name would only repeat what the model already sent.
        output: `Error${tries}: ${message}`,
        ...(transient ? { infrastructure: true } : {}),
        attempts: attempt,
      });
    }
  }
}

/**
 * Zod issues in one line that names each field: `to: Invalid email address; subject: Required`. `root` names an
 * issue of the whole value.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[], root = '(arguments)'): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : root}: ${issue.message}`)
    .join('; ');
}

function render(value: unknown, maxChars: number): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'OK';
  // Marker included, within maxChars: the cut of every output that follows leaves it as it is.
  const marker = ` …[cut at ${maxChars} chars]`;
  const json = boundedJson(value, Math.max(maxChars - marker.length, 0));
  return json.complete ? json.text : `${json.text}${marker}`;
}

class CallTimeout extends Error {}

/**
 * `ToolContext.once` where no ledger stands behind the run: the effect runs, nothing is remembered; a lease it
 * asks for is taken first and given back after.
 */
function bareOnce(signal: AbortSignal): ToolContext['once'] {
  return async (effect, key) => {
    const lease = typeof key === 'object' && key.acquire ? await key.acquire(signal) : undefined;
    try {
      return await effect({
        attempt: 1,
        lease,
        start: async () => true,
        leavePending: async () => undefined,
      });
    } finally {
      lease?.release();
    }
  };
}
