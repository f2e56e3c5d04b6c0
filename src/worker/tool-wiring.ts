// The tools a worker process offers (CONTRACT §7), built once at start: the SQL tools on the data database
// through its read-only account, and send_email through the ledger and SMTP.
import type { Pool } from 'mysql2/promise';
import { ConfigError } from '../agent/errors.js';
import type { Env } from '../../config/env.js';
import { seedDemoDatabase } from '../demo/seed-demo-database.js';
import type { Logger } from '../logging/logger.js';
import { openDataDatabase, type DataDatabase } from '../tools/data-database.js';
import { httpDeliveryLookup } from '../tools/delivery-lookup.js';
import { EmailLedger } from '../tools/email-ledger.js';
import { startEmailSweeper, type SweepOutcome } from '../tools/email-sweeper.js';
import { createSendEmailTool } from '../tools/send-email.js';
import { createSmtpTransport } from '../tools/smtp-transport.js';
import { createSqlTools } from '../tools/sql-tools.js';
import { StaticToolProvider, type ToolProvider } from './tool-provider.js';

export interface ToolWiring {
  provider: ToolProvider;
  close(): Promise<void>;
}

export async function buildToolProvider(
  env: Env,
  store: Pool,
  logger: Logger,
  options: { dataUrlIsDefault: boolean; onEmailSettled?: (outcome: SweepOutcome) => void },
): Promise<ToolWiring> {
  const data = await openData(env, logger, options.dataUrlIsDefault);
  const transport = createSmtpTransport(env.SMTP_URL);
  const ledger = new EmailLedger(store);
  const deliveryLookup = env.SMTP_LOOKUP_URL ? httpDeliveryLookup(env.SMTP_LOOKUP_URL) : undefined;
  const tools = [
    ...createSqlTools(data, {
      maxRows: env.SQL_MAX_ROWS,
      timeoutMs: env.SQL_TIMEOUT_MS,
      ...(env.SQL_ALLOWED_TABLES ? { allowedTables: env.SQL_ALLOWED_TABLES } : {}),
    }),
    createSendEmailTool({
      ledger,
      transport,
      from: env.EMAIL_FROM,
      allowedDomains: env.EMAIL_ALLOWED_DOMAINS,
      maxPerRun: env.EMAIL_MAX_PER_RUN,
      dryRun: env.EMAIL_DRY_RUN,
      logger,
      pendingGraceMs: env.EMAIL_PENDING_GRACE_MS,
      ...(deliveryLookup ? { deliveryLookup } : {}),
    }),
  ];
  // Pending emails of attempts that stopped for good are settled here, not forgotten.
  const sweeper =
    env.EMAIL_SWEEP_INTERVAL_MS > 0
      ? startEmailSweeper({
          ledger,
          ...(deliveryLookup ? { lookup: deliveryLookup } : {}),
          graceMs: env.EMAIL_PENDING_GRACE_MS,
          intervalMs: env.EMAIL_SWEEP_INTERVAL_MS,
          logger,
          ...(options.onEmailSettled ? { onSettled: options.onEmailSettled } : {}),
        })
      : undefined;
  logger.info(
    { tools: tools.map((t) => t.name), dataDatabase: data.database, emailDryRun: env.EMAIL_DRY_RUN },
    'tools ready',
  );
  return {
    provider: new StaticToolProvider(tools),
    close: async () => {
      await sweeper?.close();
      transport.close();
      await data.close();
    },
  };
}

/**
 * Opens the data database, refusing an account that can write. When DATA_MYSQL_URL is left at its default
 * (the demo's sales database) and that database is missing, it is seeded first, so a fresh machine works.
 */
async function openData(env: Env, logger: Logger, dataUrlIsDefault: boolean): Promise<DataDatabase> {
  const options = { maxResultBytes: env.SQL_MAX_RESULT_BYTES };
  try {
    return await openDataDatabase(env.DATA_MYSQL_URL, options);
  } catch (error) {
    const writable = error instanceof ConfigError && error.code === 'data_mysql_not_read_only';
    if (writable || !dataUrlIsDefault) throw error;
    logger.info('the demo sales database is missing: seeding it (DATA_MYSQL_URL is at its default)');
    await seedDemoDatabase({ adminUrl: env.MYSQL_URL });
    return openDataDatabase(env.DATA_MYSQL_URL, options);
  }
}
