// The example's fleet configuration (FLEET_CONFIG=examples/kpi-digest/agent-fleet.config.ts): one agent,
// `kpi-digest`, that takes {region, week}, reads the week's KPIs from the team's HTTP service (kpi_fetch), the
// region's targets from an MCP server (targets_lookup), emails the digest and answers it as a typed object.
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { env } from '../../config/env.js';
import { defineAgent, defineFleet } from '../../src/kernel.js';
import { sendEmailTool } from '../../src/worker.js';
import { ISO_WEEK, REGIONS } from './kpi-data.js';
import { kpiFetchTool } from './kpi-fetch-tool.js';

/** What the agent must end with; the result carries it as `output`, the dashboard reads it. */
export const Digest = z.object({
  region: z.enum(REGIONS),
  week: z.string(),
  revenue: z.number(),
  orders: z.number().int(),
  /** Revenue as a percentage of the weekly target. */
  vsTarget: z.number(),
  highlights: z.array(z.string()).min(1),
});
export type Digest = z.infer<typeof Digest>;

/** Where each region's digest goes (the domain is the only one the email tool allows). */
export const recipientOf = (region: string) => `kpi-${region.toLowerCase()}@example.com`;

const config = env();

export const kpiDigest = defineAgent({
  name: 'kpi-digest',
  description: 'Weekly KPI digest of one region, emailed to its team and returned as a typed object.',
  input: z.object({ region: z.enum(REGIONS), week: z.string().regex(ISO_WEEK) }),
  instructions: (input) =>
    `You write the weekly KPI digest of region ${input?.region} for ${input?.week}. ` +
    `Fetch the week's KPIs with kpi_fetch and the region's targets with targets_lookup, ` +
    `email a short digest to ${recipientOf(String(input?.region))}, then answer with the digest.`,
  tools: ['kpi_fetch', 'targets_lookup', 'send_email'],
  protocol: 'tools',
  output: Digest,
  budget: { maxSteps: 6 },
  budgetCeiling: { maxSteps: 10, maxCostUsd: 0.05 },
});

export default defineFleet({
  agents: [kpiDigest],
  tools: [
    kpiFetchTool(),
    sendEmailTool({
      smtpUrl: config.SMTP_URL,
      from: config.EMAIL_FROM,
      allowedDomains: ['example.com'],
      maxPerRun: 1,
      ...(config.SMTP_LOOKUP_URL ? { lookupUrl: config.SMTP_LOOKUP_URL } : {}),
    }),
  ],
  mcpServers: [
    {
      name: 'targets',
      command: process.execPath,
      args: ['--import', 'tsx', fileURLToPath(new URL('./mcp-targets-server.ts', import.meta.url))],
      readOnly: true,
      timeoutMs: 5_000,
    },
  ],
});
