// Span ids as the SDK makes them (random), except for a span whose id was fixed before it existed: the
// `execute_tool` span of a child agent's call, whose id the child's task carries from the launch (its
// `traceparent`) while the span itself is recorded when the parent resumes, perhaps on another worker
// (child-call-spans.ts). The OpenTelemetry API has no way to name a span's id; the SDK's IdGenerator is the
// one place it is chosen, so the choice is made there, for the one synchronous startSpan call that asks.
import { RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace-base';

export class ChosenSpanIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private chosen: string | undefined;

  generateTraceId(): string {
    return this.random.generateTraceId();
  }

  generateSpanId(): string {
    const chosen = this.chosen;
    this.chosen = undefined;
    return chosen ?? this.random.generateSpanId();
  }

  /** Runs `start` (one startSpan, synchronous) with `spanId` as the id of the span it starts. */
  withSpanId<T>(spanId: string, start: () => T): T {
    this.chosen = spanId;
    try {
      return start();
    } finally {
      this.chosen = undefined;
    }
  }
}

/** What tracing needs of it: a span started with a given id. */
export type SpanIdChooser = Pick<ChosenSpanIds, 'withSpanId'>;
