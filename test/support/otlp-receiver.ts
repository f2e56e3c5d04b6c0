// A real OTLP/HTTP trace receiver for tests: POST /v1/traces with a JSON body (what
// @opentelemetry/exporter-trace-otlp-http sends), spans kept flat with their resource's service name and their
// attributes as plain values.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

export type Attr = string | number | boolean | Attr[];

export interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, Attr>;
  events: { name: string; attributes: Record<string, Attr> }[];
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Requests received, whatever their path. */
  requests: { method: string; path: string; headers: IncomingMessage['headers'] }[];
  /** Resolves once `predicate` holds over the spans received so far. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function value(v: AnyValue): Attr {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return '';
}

function attributes(list: KeyValue[] | undefined): Record<string, Attr> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const listeners = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      requests.push({ method: req.method ?? '', path, headers: req.headers });
      if (req.method !== 'POST' || path !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service: String(resource['service.name'] ?? ''),
              scope: String(ss.scope?.name ?? ''),
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              startNs: BigInt(s.startTimeUnixNano),
              endNs: BigInt(s.endTimeUnixNano),
              attributes: attributes(s.attributes),
              events: (s.events ?? []).map((e: { name: string; attributes?: KeyValue[] }) => ({
                name: e.name,
                attributes: attributes(e.attributes),
              })),
              status: { code: s.status?.code ?? 0, message: s.status?.message },
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const listener of listeners) listener();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    waitFor(predicate, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(spans)) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          const names = spans.map((s) => s.name).join(', ');
          reject(new Error(`spans not received within ${timeoutMs} ms; got: ${names}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
