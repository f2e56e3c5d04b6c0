// `sendEmailTool(...)`: send_email (CONTRACT §7) as a tool source a fleet configuration wires with its own
// SMTP server, sender, allowed domains and caps. Its rows live in the fleet's effect ledger; pending emails of
// attempts that stopped for good are settled by the worker's effect sweeper, with the tool's delivery lookup.
import type { ToolSource } from '../kernel/define-fleet.js';
import type { WorkerServices } from '../worker/worker-services.js';
import { httpDeliveryLookup } from './delivery-lookup.js';
import { EmailLedger } from './email-ledger.js';
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
  /**
   * Ignored: pending emails are settled by the worker's effect sweeper with every other tool's effects
   * (EFFECT_SWEEP_INTERVAL_MS, or its older name EMAIL_SWEEP_INTERVAL_MS). Kept so older configurations load.
   * @deprecated
   */
  sweepIntervalMs?: number;
}

export function sendEmailTool(options: EmailToolSourceOptions): ToolSource<WorkerServices> {
  return {
    kind: 'tool-source',
    names: [SEND_EMAIL],
    async open(services) {
      const transport = createSmtpTransport(options.smtpUrl);
      const deliveryLookup = options.lookupUrl ? httpDeliveryLookup(options.lookupUrl) : undefined;
      const tool = createSendEmailTool({
        ledger: new EmailLedger(services.store),
        transport,
        from: options.from,
        allowedDomains: options.allowedDomains,
        maxPerRun: options.maxPerRun,
        dryRun: options.dryRun ?? false,
        logger: services.logger,
        pendingGraceMs: options.pendingGraceMs ?? 120_000,
        ...(deliveryLookup ? { deliveryLookup } : {}),
        ...(services.onEmailSettled ? { onSettled: services.onEmailSettled } : {}),
      });
      return {
        tools: [tool],
        close: async () => {
          transport.close();
        },
      };
    },
  };
}
