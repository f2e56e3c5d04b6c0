// The team's own HTTP API, as far as the example needs one: `GET /kpis?region=EU&week=2026-W48` answers the
// week's KPIs as JSON. It listens on 127.0.0.1 only and counts the requests it served.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ISO_WEEK, kpisFor, REGIONS, type Region } from './kpi-data.js';

export interface KpiService {
  /** e.g. http://127.0.0.1:41234, for KPI_SERVICE_URL. */
  url: string;
  /** How many KPI requests it answered. */
  readonly served: number;
  close(): Promise<void>;
}

export async function startKpiService(): Promise<KpiService> {
  let served = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://kpi');
    const region = url.searchParams.get('region') ?? '';
    const week = url.searchParams.get('week') ?? '';
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'GET' || url.pathname !== '/kpis') return reply(404, { error: 'not found' });
    if (!REGIONS.includes(region as Region)) return reply(400, { error: `unknown region "${region}"` });
    if (!ISO_WEEK.test(week)) return reply(400, { error: `week must look like 2026-W48, got "${week}"` });
    served++;
    reply(200, kpisFor(region as Region, week));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get served() {
      return served;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
