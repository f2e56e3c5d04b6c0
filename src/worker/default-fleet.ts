// The built-in fleet configuration, used when there is no FLEET_CONFIG and no agent-fleet.config.* at the root:
// the `default` agent (exactly the fleet's behaviour before agents: the protocol's system prompt, the
// four built-in tools, the environment's model and budgets) with its tools wired from the environment.
import { DEFAULT_AGENT, defineAgent } from '../kernel/define-agent.js';
import { defineFleet, type Fleet } from '../kernel/define-fleet.js';
import { env as processEnv, type Env } from '../../config/env.js';
import { TOOL_NAMES } from '../queue/tool-names.js';
import { sendEmailTool } from '../tools/email-tool-source.js';
import { sqlTools } from '../tools/sql-tool-source.js';

export { DEFAULT_AGENT };

export const defaultAgent = defineAgent({
  name: DEFAULT_AGENT,
  description: 'Answers a free-text task with the data database (read-only SQL) and email.',
  tools: [...TOOL_NAMES],
});

export interface DefaultToolsOptions {
  /** Called once when the data database cannot be opened for being absent, then opened again (the demo seeds it). */
  whenDataDatabaseMissing?: (() => Promise<void>) | undefined;
  /** Read by earlier versions, which seeded the demo's database themselves; ignored. */
  dataUrlIsDefault?: boolean;
}

/**
 * The SQL tools and send_email as the environment configures them (DATA_MYSQL_URL, SQL_*, SMTP_*, EMAIL_*):
 * `env` is the process's environment unless given (`parseEnv({...})` from the same entry makes one).
 */
export function defaultTools(env: Env = processEnv(), options: DefaultToolsOptions = {}) {
  return [
    sqlTools({
      database: env.DATA_MYSQL_URL,
      maxRows: env.SQL_MAX_ROWS,
      timeoutMs: env.SQL_TIMEOUT_MS,
      maxResultBytes: env.SQL_MAX_RESULT_BYTES,
      ...(options.whenDataDatabaseMissing ? { whenMissing: options.whenDataDatabaseMissing } : {}),
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

/** The name the built-in tools had when the built-in configuration was the demo's. */
export const demoTools = defaultTools;

export function defaultFleet(env: Env, options: DefaultToolsOptions = {}): Fleet {
  return defineFleet({ agents: [defaultAgent], tools: defaultTools(env, options) });
}
