// The kernel's run observer (src/kernel/run-observer.ts) as OpenTelemetry spans after the GenAI semantic
// conventions (docs/telemetry.md): `invoke_agent {agent}` per run, as a child of the active context (BullMQ's
// `process` span of the job), and under it `chat {model}` per model call (its retries included, one event per
// failed attempt), `execute_tool {tool}` per tool call and, in a run resumed after approvals, `approval_wait {tool}`
// per decided call (approval-wait-spans.ts), and `execute_tool {child tool}` per child agent's call
// (child-call-spans.ts); a child's `invoke_agent` is a child of that span instead. Attributes of the fleet's own are under
// `agent_fleet.`. Content (prompts, replies, tool arguments and results) only when capture is on, scrubbed.
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { ModelApiError } from '../kernel/errors.js';
import type { ModelCallResult } from '../kernel/model-call.js';
import type { ModelCallStart, ModelCallWatch, ToolCallStart, ToolCallWatch } from '../kernel/run-observer.js';
import type { AgentResult } from '../kernel/types.js';
import type { ToolCallOutcome } from '../kernel/run-tool-call.js';
import { inputContent, outputContent, safeJson, safeText } from './genai-content.js';
import { recordApprovalWaits } from './approval-wait-spans.js';
import {
  launchChildCalls,
  recordReturnedChildCalls,
  type ChildCallSpans,
  type ChildCallTrace,
  type ReturnedChildCall,
} from './child-call-spans.js';
import type { SpanIdChooser } from './chosen-span-ids.js';
import { parseTraceparent } from './traceparent.js';
import type { DecidedWait, RunTrace, RunTraceStart } from './telemetry-types.js';

export const PROVIDER = 'openai';

export interface GenAiTracingOptions {
  captureContent: boolean;
  /** The model endpoint's host and port (server.address / server.port of `chat` spans). */
  server?: { address: string; port: number };
  /** The SDK's span ids, for the spans of child calls recorded at the parent's resume (child-call-spans.ts). */
  spanIds?: SpanIdChooser;
}

/** The host and port of a Chat Completions base URL; OpenAI's when none is given. */
export function serverOf(baseUrl: string | undefined): { address: string; port: number } | undefined {
  try {
    const url = new URL(baseUrl ?? 'https://api.openai.com/v1');
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { address: url.hostname, port };
  } catch {
    return undefined;
  }
}

export class GenAiTracing {
  constructor(
    private readonly tracer: Tracer,
    private readonly options: GenAiTracingOptions,
  ) {}

  startRun(start: RunTraceStart): RunTrace {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': start.agent,
      'gen_ai.provider.name': PROVIDER,
      'gen_ai.request.model': start.model,
      'gen_ai.conversation.id': start.jobId,
      'agent_fleet.job.id': start.jobId,
      'agent_fleet.job.attempt': start.attempt,
    };
    if (start.batchId) attributes['agent_fleet.batch.id'] = start.batchId;
    if (this.options.captureContent) {
      attributes['gen_ai.input.messages'] = safeJson([
        { role: 'user', parts: [{ type: 'text', content: start.task }] },
      ]);
    }
    const span = this.tracer.startSpan(
      `invoke_agent ${start.agent}`,
      { kind: SpanKind.INTERNAL, attributes, ...underCall(start.traceparent) },
      callContext(start.traceparent),
    );
    return new AgentRunTrace(this.tracer, span, this.options);
  }
}

/**
 * A child agent's run is a child of its parent's call span (the traceparent its task carries), not of the job's
 * `process` span: that one descends from the parent's delivery that added the job, not from the call.
 */
function callContext(traceparent: string | undefined): Context {
  const parsed = parseTraceparent(traceparent);
  if (!parsed) return context.active();
  return trace.setSpanContext(context.active(), {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/** The delivery's `process` span, linked from a child's run so the job's own spans stay one step away. */
function underCall(traceparent: string | undefined): { links?: Link[] } {
  if (!parseTraceparent(traceparent)) return {};
  const delivery = trace.getSpanContext(context.active());
  return delivery && trace.isSpanContextValid(delivery) ? { links: [{ context: delivery }] } : {};
}

class AgentRunTrace implements RunTrace {
  private readonly parent: Context;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
    private readonly options: GenAiTracingOptions,
  ) {
    this.parent = trace.setSpan(context.active(), span);
  }

  approvalWaits(waits: readonly DecidedWait[]): void {
    recordApprovalWaits(this.tracer, this.parent, waits, this.options.captureContent);
  }

  childCallsLaunched(calls: readonly ChildCallTrace[], resumeInTrace: boolean): Record<string, string> {
    return launchChildCalls(this.childSpans(), this.parent, calls, resumeInTrace);
  }

  childCallsReturned(calls: readonly ReturnedChildCall[]): void {
    recordReturnedChildCalls(this.childSpans(), this.parent, calls);
  }

  private childSpans(): ChildCallSpans {
    return {
      tracer: this.tracer,
      spanIds: this.options.spanIds,
      captureContent: this.options.captureContent,
    };
  }

  modelCall(call: ModelCallStart): ModelCallWatch {
    return new ChatSpan(this.tracer, this.parent, call, this.options);
  }

  toolCall(call: ToolCallStart): ToolCallWatch {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.name,
      'gen_ai.tool.call.id': call.callId,
      'gen_ai.tool.type': 'function',
      'agent_fleet.step': call.step,
    };
    if (this.options.captureContent && call.args !== undefined) {
      attributes['gen_ai.tool.call.arguments'] = safeJson(call.args);
    }
    const span = this.tracer.startSpan(
      `execute_tool ${call.name}`,
      { kind: SpanKind.INTERNAL, attributes },
      this.parent,
    );
    const capture = this.options.captureContent;
    return {
      ended(outcome: ToolCallOutcome) {
        span.setAttribute('agent_fleet.tool.attempts', outcome.attempts);
        span.setAttribute('agent_fleet.tool.duration_ms', outcome.latencyMs);
        span.setAttribute('agent_fleet.tool.outcome', toolOutcome(outcome));
        if (capture) span.setAttribute('gen_ai.tool.call.result', safeText(outcome.output));
        if (!outcome.ok) {
          const type = outcome.errorCode ?? 'tool_error';
          span.setAttribute('error.type', type);
          span.setStatus({ code: SpanStatusCode.ERROR, message: type });
        }
        span.end();
      },
    };
  }

  end(result: AgentResult): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    span.setAttributes({
      'gen_ai.usage.input_tokens': result.usage.promptTokens,
      'gen_ai.usage.output_tokens': result.usage.completionTokens,
      'agent_fleet.cost_usd': result.usage.costUsd,
      'agent_fleet.run.status': result.status,
      'agent_fleet.run.stop_reason': result.stopReason,
      'agent_fleet.run.steps': result.steps,
      'agent_fleet.run.tool_calls': result.toolCalls,
    });
    setDetailedUsage(span, result.usage);
    if (this.options.captureContent && result.answer !== null) {
      span.setAttribute(
        'gen_ai.output.messages',
        safeJson([{ role: 'assistant', parts: [{ type: 'text', content: result.answer }] }]),
      );
    }
    if (result.stopReason === 'awaiting_approval') {
      // Parked, not ended: the run resumes as another attempt's span once its calls are decided. Said in so many
      // words, and never an error, whatever else the result carries.
      span.setAttribute('agent_fleet.run.parked', true);
      span.setAttribute('agent_fleet.approval.awaiting', result.awaitingApproval?.length ?? 0);
    } else if (result.error) {
      span.setAttribute('error.type', result.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: safeText(result.error.message, 500) });
    }
    span.end();
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const err = error instanceof Error ? error : new Error(String(error));
    this.span.setAttribute('error.type', err.name || 'Error');
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: safeText(err.message, 500) });
    this.span.end();
  }
}

/** A `chat` span, started when the first attempt is sent: a call the budget refused sends nothing and has none. */
class ChatSpan implements ModelCallWatch {
  private span: Span | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: Context,
    private readonly call: ModelCallStart,
    private readonly options: GenAiTracingOptions,
  ) {}

  attempt(attempt: number, maxTokens: number): void {
    if (!this.span) {
      const attributes: Attributes = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': PROVIDER,
        // The name before gen_ai.provider.name, still read by many backends.
        'gen_ai.system': PROVIDER,
        'gen_ai.request.model': this.call.model,
        'gen_ai.request.temperature': this.call.temperature,
        'agent_fleet.model.purpose': this.call.purpose,
      };
      if (this.options.server) {
        attributes['server.address'] = this.options.server.address;
        attributes['server.port'] = this.options.server.port;
      }
      if (this.options.captureContent) {
        const content = inputContent(this.call.messages);
        if (content.system) attributes['gen_ai.system_instructions'] = content.system;
        attributes['gen_ai.input.messages'] = content.input;
      }
      this.span = this.tracer.startSpan(
        `chat ${this.call.model}`,
        { kind: SpanKind.CLIENT, attributes },
        this.parent,
      );
    }
    // A retry may ask for fewer tokens (less budget left): the span shows what the last attempt asked.
    this.span.setAttribute('gen_ai.request.max_tokens', maxTokens);
    if (attempt > 1) this.span.setAttribute('agent_fleet.model.retries', attempt - 1);
  }

  attemptFailed(attempt: number, error: ModelApiError): void {
    const attributes: Attributes = { 'agent_fleet.attempt': attempt, 'error.type': error.code };
    if (error.status !== undefined) attributes['http.response.status_code'] = error.status;
    this.span?.addEvent('agent_fleet.model.attempt_failed', attributes);
  }

  ended(result: ModelCallResult, costUsd: number): void {
    const span = this.span;
    if (!span) return;
    span.setAttributes({
      'gen_ai.usage.input_tokens': result.usage.promptTokens,
      'gen_ai.usage.output_tokens': result.usage.completionTokens,
      'agent_fleet.cost_usd': costUsd,
      'agent_fleet.model.attempts': result.attempts,
    });
    if (result.ok) {
      const completion = result.completion;
      if (completion.responseId) span.setAttribute('gen_ai.response.id', completion.responseId);
      span.setAttribute('gen_ai.response.model', completion.responseModel ?? this.call.model);
      if (completion.finishReason)
        span.setAttribute('gen_ai.response.finish_reasons', [completion.finishReason]);
      setDetailedUsage(span, result.usage);
      if (!completion.usage) span.setAttribute('agent_fleet.usage.estimated', true);
      if (completion.serviceTier) span.setAttribute('openai.response.service_tier', completion.serviceTier);
      if (this.options.captureContent) {
        span.setAttribute(
          'gen_ai.output.messages',
          outputContent(completion.message, completion.finishReason),
        );
      }
    } else if (result.stop === 'error') {
      span.setAttribute('error.type', result.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: safeText(result.error.message, 500) });
    } else {
      // Stopped between attempts (budget, deadline, cancellation): not the endpoint's error.
      span.setAttribute('agent_fleet.model.stopped', result.stop);
    }
    span.end();
  }
}

/** Cached prompt and reasoning tokens, when the endpoint reported them. */
function setDetailedUsage(
  span: Span,
  usage: { cachedPromptTokens?: number; reasoningTokens?: number },
): void {
  if (usage.cachedPromptTokens !== undefined)
    span.setAttribute('gen_ai.usage.cache_read.input_tokens', usage.cachedPromptTokens);
  if (usage.reasoningTokens !== undefined)
    span.setAttribute('gen_ai.usage.reasoning.output_tokens', usage.reasoningTokens);
}

function toolOutcome(outcome: ToolCallOutcome): string {
  if (outcome.uncertain) return 'uncertain';
  if (outcome.ok) return 'ok';
  return outcome.infrastructure ? 'unavailable' : 'error';
}
