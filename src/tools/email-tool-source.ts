// `sendEmailTool(...)`: send_email (CONTRACT §7) as a tool source a fleet configuration wires with its own
// SMTP server, sender, allowed domains and caps. Its ledger lives in the fleet's store; pending emails of
// attempts that stopped for good are settled by the sweeper it starts.
import type { ToolSource } from '../agent/define-fleet.js';
import type { WorkerServices } from '../worker/worker-services.js';
import { httpDeliveryLookup } from './delivery-lookup.js';
import { EmailLedger } from './email-ledger.js';
import { startEmailSweeper } from './email-sweeper.js';
import { createSendEmailTool, SEND_EMAIL } from './send-email.js';
import { createSmtpTransport } from './smtp-transport.js';

export interface EmailToolSourceOptions {
  smtpUrl: string;
  from: string;
  allowedDomains: readonly string[];
  maxPerRun: number;
  dryRun?: boolean;
  /** SMTP_LOOKUP_URL: settles emails left pending by a crash (docs/side-effects.md). */
  lookupUrl?: string;
  pendingGraceMs?: number;
  /** How often pending emails are settled; 0 turns the sweeper off. Default 60 s. */
  sweepIntervalMs?: number;
}

export function sendEmailTool(options: EmailToolSourceOptions): ToolSource<WorkerServices> {
  return {
    kind: 'tool-source',
    names: [SEND_EMAIL],
    async open(services) {
      const transport = createSmtpTransport(options.smtpUrl);
      const ledger = new EmailLedger(services.store);
      const deliveryLookup = options.lookupUrl ? httpDeliveryLookup(options.lookupUrl) : undefined;
      const pendingGraceMs = options.pendingGraceMs ?? 120_000;
      const tool = createSendEmailTool({
        ledger,
        transport,
        from: options.from,
        allowedDomains: options.allowedDomains,
        maxPerRun: options.maxPerRun,
        dryRun: options.dryRun ?? false,
        logger: services.logger,
        pendingGraceMs,
        ...(deliveryLookup ? { deliveryLookup } : {}),
      });
      const intervalMs = options.sweepIntervalMs ?? 60_000;
      const sweeper =
        intervalMs > 0
          ? startEmailSweeper({
              ledger,
              ...(deliveryLookup ? { lookup: deliveryLookup } : {}),
              graceMs: pendingGraceMs,
              intervalMs,
              logger: services.logger,
              ...(services.onEmailSettled ? { onSettled: services.onEmailSettled } : {}),
            })
          : undefined;
      return {
        tools: [tool],
        close: async () => {
          await sweeper?.close();
          transport.close();
        },
      };
    },
  };
}
