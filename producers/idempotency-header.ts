// The HTTP API's Idempotency-Key header: the same key as a task's `idempotencyKey` field (the same key enqueued
// twice names the same job, src/client/fleet-client.ts), given where HTTP clients and proxies expect it. Given in both
// places, the two must be equal: a request that says two things is refused, naming the field.
import { idempotencyKeySchema, type FieldIssue } from '../src/queue/task-schema.js';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

export type KeyedBody = { ok: true; body: unknown } | { ok: false; issues: FieldIssue[] };

/** The task body with the header's key in `idempotencyKey`; the body unchanged without a header. */
export function withIdempotencyHeader(header: string | undefined, body: unknown): KeyedBody {
  if (header === undefined) return { ok: true, body };
  const key = idempotencyKeySchema.safeParse(header);
  if (!key.success) {
    return {
      ok: false,
      issues: [{ path: IDEMPOTENCY_HEADER, message: `header: ${key.error.issues[0]?.message}` }],
    };
  }
  // Not an object: the task's own validation says so.
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: true, body };
  const given = (body as Record<string, unknown>)['idempotencyKey'];
  if (given !== undefined && given !== key.data) {
    const message = `differs from the ${IDEMPOTENCY_HEADER} header: give the key once, or the same in both`;
    return { ok: false, issues: [{ path: 'idempotencyKey', message }] };
  }
  return { ok: true, body: { ...body, idempotencyKey: key.data } };
}
