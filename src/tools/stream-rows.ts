// Reading the first result set of a query row by row within two limits: at most `fetch` rows, and at most
// `maxBytes` bytes of values kept. Whatever passes a limit stops the reading; the caller then kills the query
// and drops the connection (a half-read result cannot be skipped).
//
// Counting rows as they arrive is not enough for bytes: mysql2 assembles a whole packet (a whole row) before
// handing it over, so one 16 MB cell would be in memory before it could be counted, and MariaDB does not let a
// session lower max_allowed_packet or net_buffer_length (both are read-only per session). So the bytes arriving
// on the socket are counted too, and reading stops once they pass the limit by a margin that covers the
// protocol's framing (column definitions, a few bytes per value): what the process holds stays near maxBytes.
import type { FieldPacket, PoolConnection } from 'mysql2/promise';
import type { Connection as CoreConnection } from 'mysql2';

/** Rejected with when the caller's signal aborts a running query. */
export class QueryStopped extends Error {}

export interface StreamLimits {
  fetch: number;
  maxBytes: number;
  signal: AbortSignal | undefined;
  clientTimeoutMs: number;
}

export interface StreamOutcome {
  columns: string[];
  rows: unknown[][];
  /** True when the query was still sending rows and we stopped reading: the connection cannot be reused. */
  stopped: boolean;
  /** True when the rows kept stop short of the result because of maxBytes. */
  overBytes: boolean;
}

/** The socket may bring this much beyond maxBytes (at least) before reading stops: framing, never values. */
const MIN_WIRE_MARGIN = 64 * 1024;

/** Reads rows as arrays (so duplicate column names survive), within the limits. */
export function streamRows(
  connection: PoolConnection,
  sql: string,
  limits: StreamLimits,
): Promise<StreamOutcome> {
  // The promise wrapper buffers whole results; the callback-style connection underneath emits row events.
  const core = connection.connection as unknown as CoreConnection;
  const socket = (core as unknown as { stream: NodeJS.ReadableStream }).stream;
  const wireLimit = limits.maxBytes + Math.max(limits.maxBytes, MIN_WIRE_MARGIN);
  return new Promise<StreamOutcome>((resolve, reject) => {
    let columns: string[] | undefined;
    const rows: unknown[][] = [];
    let keptBytes = 0;
    let wireBytes = 0;
    let settled = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      limits.signal?.removeEventListener('abort', onAbort);
      core.removeListener('error', onConnectionError);
      socket.removeListener('data', onData);
      finish();
    };
    const stop = (overBytes: boolean) =>
      settle(() => {
        halt();
        resolve({ columns: columns ?? [], rows, stopped: true, overBytes });
      });
    // mysql2 keeps the client timer of a query it was never told is over, and through it the connection with
    // its half-read packet (up to twice maxBytes) until the timer fires: it is cleared with the reading.
    const halt = () => {
      core.pause();
      const pending = query as unknown as { queryTimeout?: ReturnType<typeof setTimeout> | null };
      if (pending.queryTimeout) clearTimeout(pending.queryTimeout);
      pending.queryTimeout = null;
    };
    // mysql2 reports a connection lost under a callback-less (streaming) query on the connection, not on the
    // query: without this the promise would wait for the client timeout.
    const onConnectionError = (error: Error) => settle(() => reject(error));
    core.on('error', onConnectionError);
    const onAbort = () =>
      settle(() => {
        halt();
        reject(new QueryStopped('aborted'));
      });
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    // Runs after mysql2's own listener has parsed the chunk: the rows it completed were counted already.
    const onData = (chunk: Buffer) => {
      wireBytes += chunk.length;
      if (wireBytes > wireLimit) stop(true);
    };
    socket.on('data', onData);

    const query = core.query({ sql, rowsAsArray: true, timeout: limits.clientTimeoutMs });
    query.on('fields', (fields: FieldPacket[] | undefined) => {
      if (fields) columns ??= fields.map((field) => field.name);
    });
    query.on('result', (row: unknown, resultIndex: number) => {
      if (settled || resultIndex > 0 || !Array.isArray(row)) return;
      if (rows.length >= limits.fetch) return stop(false);
      keptBytes += rowBytes(row);
      if (keptBytes > limits.maxBytes) return stop(true);
      rows.push(row);
    });
    query.on('error', (error: Error) => settle(() => reject(error)));
    query.on('end', () =>
      settle(() => resolve({ columns: columns ?? [], rows, stopped: false, overBytes: false })),
    );
  });
}

/** Bytes of a row's values: UTF-8 text and binary as they are; numbers and dates a few bytes, as on the wire. */
export function rowBytes(row: readonly unknown[]): number {
  let total = 0;
  for (const value of row) {
    if (typeof value === 'string') total += Buffer.byteLength(value);
    else if (value instanceof Uint8Array) total += value.byteLength;
    else if (value !== null && value !== undefined) total += 8;
  }
  return total;
}
