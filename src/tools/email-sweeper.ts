// Settles the email ledger's rows that nobody else will: a row left pending by an attempt that stopped (its
// worker died after the claim and the job never resumed, or the run ended with its delivery uncertain). Run by
// every worker at start and then periodically; each settlement is a conditional update, so workers sweeping at
// once agree. A row never handed off to SMTP, or one the lookup says never arrived, becomes `failed` with a
// "not delivered" note (a job that resumes later sends it; otherwise the batch report lists it); one the
// lookup finds is recorded as sent; one nothing can tell about becomes `uncertain`, looked at again on every
// sweep while a lookup is configured. The sweeper never sends: only the call that has the body may.
import type { DeliveryLookup } from './delivery-lookup.js';
import { NOT_DELIVERED, type EmailLedger, type EmailLedgerEntry } from './email-ledger.js';

export type SweepOutcome = 'sent' | 'not_delivered' | 'uncertain';

export interface SweeperLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface EmailSweeperOptions {
  ledger: Pick<EmailLedger, 'listUnsettled' | 'release' | 'markSent' | 'markUncertain'>;
  lookup?: DeliveryLookup;
  /** EMAIL_PENDING_GRACE_MS: a pending row younger than this may still be held by a live attempt. */
  graceMs: number;
  logger: SweeperLogger;
  /** Each row settled (for metrics). */
  onSettled?: (outcome: SweepOutcome) => void;
  /** Rows looked at per sweep. Default 100. */
  batchSize?: number;
}

export type SweepCounts = Record<SweepOutcome, number>;

/** One pass over the unsettled rows. Never throws: a failing ledger is logged and the next sweep tries again. */
export async function sweepUnsettledEmails(options: EmailSweeperOptions): Promise<SweepCounts> {
  const counts: SweepCounts = { sent: 0, not_delivered: 0, uncertain: 0 };
  let rows: EmailLedgerEntry[];
  try {
    rows = await options.ledger.listUnsettled(options.graceMs, {
      includeUncertain: options.lookup !== undefined,
      limit: options.batchSize ?? 100,
    });
  } catch (error) {
    options.logger.warn({ err: messageOf(error) }, 'email sweep: the ledger is unavailable');
    return counts;
  }
  for (const row of rows) {
    try {
      const outcome = await settle(row, options);
      if (outcome === null) continue;
      counts[outcome]++;
      options.onSettled?.(outcome);
      const fields = { jobId: row.jobId, callKey: row.callKey, messageId: row.messageId };
      if (outcome === 'sent') options.logger.info(fields, 'email sweep: delivered, recorded as sent');
      else if (outcome === 'not_delivered')
        options.logger.warn(fields, 'email sweep: email was not delivered');
      else options.logger.warn(fields, 'email sweep: delivery cannot be known');
    } catch (error) {
      options.logger.warn({ callKey: row.callKey, err: messageOf(error) }, 'email sweep: row not settled');
    }
  }
  return counts;
}

/** The row's outcome, or null when it changed meanwhile or stays as it was. */
async function settle(row: EmailLedgerEntry, options: EmailSweeperOptions): Promise<SweepOutcome | null> {
  if (row.status === 'pending' && row.smtpStartedAt === null) {
    const why = `${NOT_DELIVERED}: its attempt stopped before reaching the SMTP server`;
    return (await options.ledger.release(row.callKey, row.attempt, why)) ? 'not_delivered' : null;
  }
  if (!options.lookup) {
    const why = 'delivery unknown: no delivery lookup is configured (SMTP_LOOKUP_URL)';
    return (await options.ledger.markUncertain(row.callKey, why)) ? 'uncertain' : null;
  }
  let delivered: boolean;
  try {
    delivered = await options.lookup.delivered(row.messageId);
  } catch (error) {
    if (row.status === 'uncertain') return null;
    const why = `delivery unknown: the delivery lookup failed (${messageOf(error)})`;
    return (await options.ledger.markUncertain(row.callKey, why)) ? 'uncertain' : null;
  }
  if (delivered) {
    await options.ledger.markSent(row.callKey, 'delivered (confirmed by the sweeper’s lookup)');
    return 'sent';
  }
  const why = `${NOT_DELIVERED} (the sweeper’s lookup found no such message)`;
  return (await options.ledger.release(row.callKey, row.attempt, why)) ? 'not_delivered' : null;
}

export interface EmailSweeper {
  close(): Promise<void>;
}

/** Sweeps now and then every `intervalMs`; one sweep at a time; close() waits for the one under way. */
export function startEmailSweeper(options: EmailSweeperOptions & { intervalMs: number }): EmailSweeper {
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = running.then(() => sweepUnsettledEmails(options));
  };
  sweep();
  const timer = setInterval(sweep, options.intervalMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
