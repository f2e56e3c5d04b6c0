// `kpi_fetch`: a custom tool that calls the team's KPI service over HTTP. It reads only, so a retry may call it
// again; the response is read up to a bound, and the call has a time limit (ctx.signal also aborts it).
import { z } from 'zod';
import { ConfigError, defineTool, ToolError, TransientToolError } from '../../src/kernel.js';
import { ISO_WEEK, REGIONS } from './kpi-data.js';

const MAX_RESPONSE_BYTES = 16 * 1024;

/** KPI_SERVICE_URL, checked when the worker loads the configuration. */
function kpiServiceUrl(): URL {
  const raw = process.env['KPI_SERVICE_URL'] ?? 'http://127.0.0.1:8787';
  const url = URL.canParse(raw) ? new URL(raw) : null;
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    throw new ConfigError('bad_env', `KPI_SERVICE_URL: must be an http(s) URL, got "${raw}"`);
  }
  return url;
}

async function readBounded(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new ToolError(
        'response_too_large',
        `the KPI service answered more than ${MAX_RESPONSE_BYTES} bytes`,
      );
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function kpiFetchTool() {
  const base = kpiServiceUrl();
  return defineTool({
    name: 'kpi_fetch',
    description: 'Revenue, orders and top product of one region for one ISO week (e.g. 2026-W48).',
    parameters: z.object({ region: z.enum(REGIONS), week: z.string().regex(ISO_WEEK) }),
    readOnly: true,
    timeoutMs: 5_000,
    async execute({ region, week }, ctx) {
      const url = new URL('/kpis', base);
      url.search = new URLSearchParams({ region, week }).toString();
      const response = await fetch(url, { signal: ctx.signal }).catch((error: unknown) => {
        if (ctx.signal.aborted) throw error;
        throw new TransientToolError(`the KPI service is unreachable: ${String(error)}`);
      });
      const body = await readBounded(response);
      if (response.status >= 500) throw new TransientToolError(`the KPI service answered ${response.status}`);
      if (!response.ok)
        throw new ToolError('kpi_refused', `the KPI service answered ${response.status}: ${body}`);
      return body;
    },
  });
}
