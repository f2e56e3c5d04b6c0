// The W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header) of version 00, as
// a child agent's task carries it: the trace and the span of the parent's call that started it. Pure text, no
// OpenTelemetry module: the task schema checks it on every worker, tracing or not.

/** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, lower case; all-zero ids are invalid. */
export const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export interface TraceParent {
  traceId: string;
  spanId: string;
  /** The `sampled` flag (bit 0 of the flags). */
  sampled: boolean;
}

export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${parent.sampled ? '01' : '00'}`;
}

/** The trace and span a `traceparent` names; null for any text not of the format. */
export function parseTraceparent(text: string | undefined): TraceParent | null {
  if (text === undefined || !TRACEPARENT.test(text)) return null;
  const [, traceId, spanId, flags] = text.split('-') as [string, string, string, string];
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}
