// The built-in fleet configuration, used when there is no FLEET_CONFIG and no agent-fleet.config.* at the root:
// the `default` agent (exactly the fleet's behaviour before agents: the protocol's system prompt, the four
// tools of CONTRACT §7, the environment's model and budgets) with its tools wired from the environment.
import { DEFAULT_AGENT, defineAgent } from '../agent/define-agent.js';
import { defineFleet, type Fleet } from '../agent/define-fleet.js';
import type { Env } from '../../config/env.js';
import { TOOL_NAMES } from '../queue/tool-names.js';
import { sendEmailTool } from '../tools/email-tool-source.js';
import { sqlTools } from '../tools/sql-tool-source.js';

export { DEFAULT_AGENT };

export const defaultAgent = defineAgent({
  name: DEFAULT_AGENT,
  description: 'Answers a free-text task with the data database (read-only SQL) and email.',
  tools: [...TOOL_NAMES],
});

/** The SQL tools and send_email as the environment configures them (SQL_*, SMTP_*, EMAIL_*). */
export function demoTools(env: Env, options: { dataUrlIsDefault: boolean }) {
  return [
    sqlTools({
      database: env.DATA_MYSQL_URL,
      maxRows: env.SQL_MAX_ROWS,
      timeoutMs: env.SQL_TIMEOUT_MS,
      maxResultBytes: env.SQL_MAX_RESULT_BYTES,
      seedDemoWhenMissing: options.dataUrlIsDefault,
      ...(env.SQL_ALLOWED_TABLES ? { allowedTables: env.SQL_ALLOWED_TABLES } : {}),
    }),
    sendEmailTool({
      smtpUrl: env.SMTP_URL,
      maxConnections: env.SMTP_MAX_CONNECTIONS,
      maxQueued: env.SMTP_MAX_QUEUED,
      from: env.EMAIL_FROM,
      allowedDomains: env.EMAIL_ALLOWED_DOMAINS,
      maxPerRun: env.EMAIL_MAX_PER_RUN,
      dryRun: env.EMAIL_DRY_RUN,
      pendingGraceMs: env.EMAIL_PENDING_GRACE_MS,
      ...(env.SMTP_LOOKUP_URL ? { lookupUrl: env.SMTP_LOOKUP_URL } : {}),
    }),
  ];
}

export function demoFleet(env: Env, options: { dataUrlIsDefault: boolean }): Fleet {
  return defineFleet({ agents: [defaultAgent], tools: demoTools(env, options) });
}
