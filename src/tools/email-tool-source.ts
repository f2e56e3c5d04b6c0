// `sendEmailTool(...)`: send_email (docs/agents-and-tools.md) as a tool source a fleet configuration wires with its own
// SMTP server, sender, allowed domains and caps. Its rows live in the fleet's effect ledger; pending emails of
// attempts that stopped for good are settled by the worker's effect sweeper, with the tool's delivery lookup.
import type { ToolSource } from '../kernel/define-fleet.js';
import { effectLedgerOf } from '../effects/effect-ledger-of.js';
import type { ToolServices } from './tool-services.js';
import { httpDeliveryLookup } from './delivery-lookup.js';
import { checkEmailToolOptions } from './email-tool-options.js';
import { createSendEmailTool, SEND_EMAIL, type SendEmailToolOptions } from './send-email.js';
import { SmtpPool } from './smtp-pool.js';

export interface EmailToolSourceOptions {
  /** smtp:// or smtps:// (SMTP_URL). */
  smtpUrl: string;
  /** SMTP_MAX_CONNECTIONS: SMTP connections kept open at most. Default 5. */
  maxConnections?: number;
  /** SMTP_MAX_QUEUED: sends waiting for a free connection at most. Default 1,000. */
  maxQueued?: number;
  /** The sender's address (EMAIL_FROM). */
  from: string;
  /** A list of domains, e.g. ['example.com']: recipients elsewhere are refused. EMAIL_ALLOWED_DOMAINS. */
  allowedDomains: readonly string[];
  /** Emails one job may send (EMAIL_MAX_PER_RUN). */
  maxPerRun: number;
  dryRun?: boolean;
  /** SMTP_LOOKUP_URL: settles emails left pending by a crash (docs/side-effects.md). */
  lookupUrl?: string;
  pendingGraceMs?: number;
  /**
   * Whether an email waits for a person's decision before it goes: always, or a function of its arguments (a
   * recipient outside a list). docs/approvals.md.
   */
  needsApproval?: SendEmailToolOptions['needsApproval'];
}

/** Throws a ConfigError naming the option when one has the wrong shape (the worker stops at start with it). */
export function sendEmailTool(options: EmailToolSourceOptions): ToolSource<ToolServices> {
  checkEmailToolOptions(options);
  return {
    kind: 'tool-source',
    names: [SEND_EMAIL],
    async open(services) {
      const transport = new SmtpPool(options.smtpUrl, {
        ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
        ...(options.maxQueued !== undefined ? { maxQueued: options.maxQueued } : {}),
      });
      const deliveryLookup = options.lookupUrl ? httpDeliveryLookup(options.lookupUrl) : undefined;
      const tool = createSendEmailTool({
        ledger: effectLedgerOf(services),
        transport,
        from: options.from,
        allowedDomains: options.allowedDomains,
        maxPerRun: options.maxPerRun,
        dryRun: options.dryRun ?? false,
        logger: services.logger,
        pendingGraceMs: options.pendingGraceMs ?? 120_000,
        ...(options.needsApproval !== undefined ? { needsApproval: options.needsApproval } : {}),
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
