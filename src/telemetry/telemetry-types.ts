// What a process gets when it exports traces, in a module of its own: the exporter (loaded only when traces are
// exported, otel-export.ts) and the tracing it builds name these types without importing the module that loads them.
import type { Telemetry } from 'bullmq';
import type { RunObserver } from '../kernel/run-observer.js';
import type { AgentResult } from '../kernel/types.js';
import type { DecidedWait } from './approval-wait-spans.js';
import type { ChildCallTrace, ReturnedChildCall } from './child-call-spans.js';

export type { DecidedWait } from './approval-wait-spans.js';
export type { ChildCallTrace, ReturnedChildCall } from './child-call-spans.js';

export interface RunTraceStart {
  jobId: string;
  /** The agent's name (`default` for a task without one). */
  agent: string;
  model: string;
  /** The job's attempt, from 1. */
  attempt: number;
  batchId?: string;
  /** The task's text: in the span only when content capture is on. */
  task: string;
  /** A child agent's: the W3C traceparent of its parent's call, which its run's span is a child of. */
  traceparent?: string;
}

/** One run's `invoke_agent` span; its model and tool calls become its children. */
export interface RunTrace extends RunObserver {
  /**
   * The waits that ended since the run parked (a resumed run's decided approvals; an Approval fits), each an
   * `approval_wait {tool}` child span from its request to its decision. Call right after startRun.
   */
  approvalWaits(waits: readonly DecidedWait[]): void;
  /**
   * The run parked to start child agents: the traceparent each child's task carries, by call key.
   * `resumeInTrace`: the job's next delivery continues this trace (it carries a trace context), so each call's
   * span is recorded at the resume (childCallsReturned); otherwise it is recorded now.
   */
  childCallsLaunched(calls: readonly ChildCallTrace[], resumeInTrace: boolean): Record<string, string>;
  /** The children of the parked turn have ended: each call's span, launch to now. Call right after startRun. */
  childCallsReturned(calls: readonly ReturnedChildCall[]): void;
  end(result: AgentResult): void;
  /** The run threw (a bug): the span records it and ends. */
  fail(error: unknown): void;
}

export interface FleetTelemetry {
  /** For BullMQ's queues and workers (`telemetry` option): carries the producer's trace into the job. */
  bullmq: Telemetry;
  startRun(start: RunTraceStart): RunTrace;
  /** Sends the spans still buffered, then stops exporting. Safe to call twice. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /** `service.name` unless OTEL_SERVICE_NAME says otherwise, e.g. `agent-fleet-worker`. */
  serviceName: string;
  /** The model endpoint (OPENAI_BASE_URL): its host and port go on `chat` spans. Default OpenAI's. */
  modelBaseUrl?: string;
  /** Where the exporter's own failures are reported (one line each, scrubbed). */
  logger?: { warn(fields: Record<string, unknown>, message: string): void };
}

export interface TelemetrySettings {
  /** Prompt, completion, tool arguments and results in spans (scrubbed): OTEL_GENAI_CAPTURE_CONTENT=true. */
  captureContent: boolean;
}
