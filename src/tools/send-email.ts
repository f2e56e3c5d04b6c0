// send_email (docs/agents-and-tools.md): one plain-text email to one recipient of an allowed domain, at most once per job
// and call however often the job is retried or resumed.
//
// The checks run cheapest and most certain first: recipient, subject, body, then the ledger, which enforces
// the per-job cap and exactly one attempt per call key. The ledger row is written before the SMTP transaction
// (pending), marked just before it starts (handed off), and settled after it (sent, with the server's reply).
// With pooled connections (smtp-pool.ts) the call first leases a free connection, waiting with nothing
// recorded, and then claims its row already handed off (one write): the mark is never set on a message that
// still waits for a connection, so a wait in the queue can never outlast the grace under a hand-off mark.
// On the worker's ledger the call does not wait for the "sent" record: it leaves with those of the emails
// claimed in the same turn (effect-done-records.ts). One that never lands leaves the row handed off, which
// the delivery lookup settles as for a crash right after the server's reply: never sent twice.
// The Message-ID is derived from the call key, so every attempt of one call carries the same one.
//
// A call that finds its row pending (an earlier attempt crashed, or is still sending) never gives up on it:
// it waits while the row is young (its attempt may be alive), then settles it. A row never handed off was
// certainly not sent: it is taken over and sent now. Otherwise the mail system is asked whether that
// Message-ID arrived (a delivery lookup): arrived, the row is recorded as sent; not arrived, it is sent now,
// under the same Message-ID. When nothing can tell, it is not sent again (at most once wins): the row becomes
// `uncertain`, and the call returns an UncertainOutcome, so the run's result lists it.
import { createHash } from 'node:crypto';
import type { SendMailOptions, SentMessageInfo } from 'nodemailer';
import { z } from 'zod';
import { ConfigError, ToolError, TransientToolError } from '../kernel/errors.js';
import type { DeliveryLookup } from './delivery-lookup.js';
import { parseRecipient } from './email-address.js';
import { sleep } from '../kernel/sleep.js';
import {
  NOT_DELIVERED,
  SEND_EMAIL,
  type ClaimResult,
  type EmailClaim,
  type EmailLedgerEntry,
} from './email-ledger.js';
import type { MailConnections, MailLease } from './smtp-pool.js';
import { classifySendError } from './smtp-transport.js';
import {
  defineTool,
  UncertainOutcome,
  type EffectHooks,
  type EffectSweepOutcome,
  type Tool,
} from '../kernel/tool.js';

/** What the tool needs of the ledger; EmailLedger is the real one. */
export interface EmailLedgerPort {
  claim(claim: EmailClaim): Promise<ClaimResult>;
  get(callKey: string): Promise<EmailLedgerEntry | null>;
  markHandedOff(callKey: string, attempt: number): Promise<boolean>;
  markSent(callKey: string, smtpResponse: string): Promise<void>;
  /**
   * Optional: records a send the server accepted without holding the call (the ledger batches the record with
   * those of the emails claimed with it); resolves once it is in. Absent: markSent, awaited.
   */
  recordSent?(callKey: string, smtpResponse: string): Promise<void>;
  markDryRun(callKey: string): Promise<void>;
  /** Given the attempt, only while that attempt still holds the row (not after a takeover). */
  markFailed(callKey: string, error: string, attempt?: number): Promise<void>;
  /** `unstartedOnly`: only while that attempt has not handed the row off. */
  release(
    callKey: string,
    attempt: number,
    why: string,
    options?: { unstartedOnly?: boolean },
  ): Promise<boolean>;
  /** Given the attempt, only while that attempt still holds the row. */
  markUncertain(callKey: string, why: string, attempt?: number): Promise<boolean>;
  /** Given the attempt, only while that attempt still holds the row. */
  noteUncertain(callKey: string, error: string, attempt?: number): Promise<void>;
}

/**
 * What the tool needs of a nodemailer Transporter (createSmtpTransport's, or any other) whose sendMail starts
 * the SMTP transaction at once; a transport that queues messages must be a MailConnections (SmtpPool).
 */
export interface MailSender {
  sendMail(mail: SendMailOptions): Promise<SentMessageInfo>;
}

export interface EmailLogger {
  info?(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** How the sweeper settled an email (the metric's outcome label). */
export type SweepOutcome = 'sent' | 'not_delivered' | 'uncertain';

export interface SendEmailToolOptions {
  ledger: EmailLedgerPort;
  transport: MailSender | MailConnections;
  /** EMAIL_FROM: a plain address; its domain also names the Message-IDs. */
  from: string;
  /** EMAIL_ALLOWED_DOMAINS: recipients must be at one of these domains exactly. */
  allowedDomains: readonly string[];
  /** EMAIL_MAX_PER_RUN: emails one job may send (or have pending, or record as dry runs). */
  maxPerRun: number;
  /** Record in the ledger as if sent, but never talk to the SMTP server. */
  dryRun?: boolean;
  maxSubjectChars?: number;
  maxBodyChars?: number;
  /**
   * The call's time limit. Longer than the transport's own timeouts together, and than waiting out the
   * pending grace, so the runner does not give up on a call that is still going to settle its ledger row.
   * Default the larger of 60 s and the grace plus 30 s.
   */
  timeoutMs?: number;
  logger?: EmailLogger;
  /**
   * Settles rows left pending by a crash after their attempt reached SMTP (SMTP_LOOKUP_URL); without it such a
   * row is never resent and ends `uncertain`.
   */
  deliveryLookup?: DeliveryLookup;
  /**
   * A pending row unchanged for less than this may still be in flight elsewhere: the call waits for it to
   * settle until it is this old. Default 120 s.
   */
  pendingGraceMs?: number;
  /** How often a waiting call reads the row again. Default 1,000 ms. */
  pendingPollMs?: number;
  /** Each email the worker's sweeper settles (for metrics). */
  onSettled?: (outcome: SweepOutcome) => void;
}

const DEFAULT_PENDING_GRACE_MS = 120_000;
const DEFAULT_PENDING_POLL_MS = 1_000;

/** Rounds of settle-and-claim-again before a call stops: each round is a takeover by this call. */
const MAX_SETTLE_ROUNDS = 3;

export { SEND_EMAIL };

const parameters = z.strictObject({
  to: z.string().describe('One recipient: a bare address like name@example.com, nothing else.'),
  subject: z.string().describe('One line of plain text.'),
  body: z.string().describe('Plain text; no HTML, no attachments.'),
});

// Line breaks (header injection), other C0/C1 controls, Unicode line separators and unpaired surrogates.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const SUBJECT_FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|\p{Cs}/u;
// In a body, tabs and line breaks are content; other controls are dropped.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const BODY_CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

export function createSendEmailTool(options: SendEmailToolOptions): Tool<typeof parameters> {
  const maxSubjectChars = options.maxSubjectChars ?? 200;
  const maxBodyChars = options.maxBodyChars ?? 10_000;
  const from = checkFrom(options.from);
  const messageIdDomain = from.slice(from.lastIndexOf('@') + 1);
  const allowed = options.allowedDomains.join(', ') || '(none)';
  const graceMs = options.pendingGraceMs ?? DEFAULT_PENDING_GRACE_MS;
  const pollMs = options.pendingPollMs ?? DEFAULT_PENDING_POLL_MS;

  return defineTool({
    name: SEND_EMAIL,
    // The same ledger as ctx.once (this tool reasons about its rows itself, in email-ledger.ts's terms): the
    // cap, the grace and the lookup the worker's sweeper settles pending emails with.
    effects: emailEffectHooks(options, graceMs),
    description:
      `Send one plain-text email to one recipient. "to" must be a single bare address at an allowed domain ` +
      `(${allowed}); no names, lists, CC or HTML. At most ${options.maxPerRun} emails per run. Each call ` +
      `sends at most once: if the result says the email was sent or its delivery is uncertain, do not send ` +
      `it again.`,
    parameters,
    timeoutMs: options.timeoutMs ?? Math.max(60_000, graceMs + 30_000),
    async execute(args, ctx) {
      const recipient = parseRecipient(args.to, options.allowedDomains);
      if (!recipient.ok) {
        throw new ToolError(
          'email_recipient_refused',
          `recipient ${quote(args.to)} refused: ${recipient.reason}`,
        );
      }
      const address = recipient.address;
      const subject = checkSubject(args.subject, maxSubjectChars);
      const body = checkBody(args.body, maxBodyChars);
      const messageId = deriveMessageId(ctx.callKey, messageIdDomain);
      // Nothing is claimed for a call that is already being abandoned.
      if (ctx.signal.aborted) throw new ToolError('aborted', 'the call was cancelled; nothing was sent');

      const connections = options.dryRun ? undefined : pooled(options.transport);
      // The connection this attempt holds while its claim is `new` (pooled transports only).
      let lease: MailLease | undefined;
      const claimRow = async (): Promise<ClaimResult> => {
        lease = connections ? await connections.acquire(ctx.signal) : undefined;
        let result: ClaimResult;
        try {
          result = await options.ledger.claim({
            callKey: ctx.callKey,
            jobId: ctx.runId,
            recipient: address,
            subject,
            messageId,
            maxForJob: options.maxPerRun,
            handedOff: lease !== undefined,
          });
        } catch (error) {
          releaseLease();
          throw ledgerUnavailable(error);
        }
        if (result.kind !== 'new') releaseLease();
        return result;
      };
      const releaseLease = () => {
        lease?.release();
        lease = undefined;
      };

      let claim = await claimRow();
      for (let round = 1; ; round++) {
        switch (claim.kind) {
          case 'cap_reached':
            throw new ToolError(
              'email_cap_reached',
              `this run already has ${claim.count} emails, the most one run may send ` +
                `(EMAIL_MAX_PER_RUN=${options.maxPerRun}); nothing was sent`,
            );
          case 'sent':
            return (
              sentObservation(claim.entry.recipient, claim.entry.messageId) +
              differs(claim.entry, address, subject)
            );
          case 'dry_run':
            return (
              dryRunObservation(claim.entry.recipient, claim.entry.messageId) +
              differs(claim.entry, address, subject)
            );
          case 'new':
            try {
              return await send(claim.attempt);
            } finally {
              releaseLease();
            }
          case 'pending': {
            const settled = await settlePending(claim.entry);
            if (settled !== 'claim_again') return settled;
            if (round >= MAX_SETTLE_ROUNDS) {
              return uncertain(claim.entry, 'other attempts of this call kept taking it over');
            }
            claim = await claimRow();
          }
        }
      }

      /** This attempt holds the row (claim `attempt`): send, and record what the server said. */
      async function send(attempt: number): Promise<string | UncertainOutcome> {
        if (options.dryRun) {
          await record(() => options.ledger.markDryRun(ctx.callKey));
          return dryRunObservation(address, messageId);
        }
        // Abandoned between the claim and the SMTP transaction: give the row back, nothing was sent.
        if (ctx.signal.aborted) {
          await record(() =>
            options.ledger.release(ctx.callKey, attempt, `${NOT_DELIVERED}: cancelled before sending`),
          );
          throw new ToolError('aborted', 'the call was cancelled; nothing was sent');
        }
        // A leased connection's claim was handed off with it; a direct transport's is marked now.
        const sender = lease ?? direct(options.transport);
        if (!lease) {
          let handedOff: boolean;
          try {
            handedOff = await options.ledger.markHandedOff(ctx.callKey, attempt);
          } catch (error) {
            // The row stays claimed but not handed off: whoever meets it later knows nothing was sent.
            throw ledgerUnavailable(error);
          }
          if (!handedOff) {
            return `Not sent by this attempt: another attempt of this call took it over (message-id ${messageId}). Do not send it again.`;
          }
        }

        let info: SentMessageInfo;
        try {
          info = await sender.sendMail({
            from,
            to: address,
            subject,
            text: body,
            messageId,
            // The envelope is what routes the message: exactly the checked sender and recipient.
            envelope: { from, to: [address] },
            disableFileAccess: true,
            disableUrlAccess: true,
          });
        } catch (error) {
          return settleFailure(error, attempt);
        }
        if (info.rejected && info.rejected.length > 0) {
          return settleFailure(
            Object.assign(new Error('recipient rejected'), { code: 'EENVELOPE' }),
            attempt,
          );
        }
        const response = typeof info.response === 'string' ? info.response : 'accepted';
        // If the record fails (or, deferred, never lands) the server has the message all the same: tell the
        // truth to the model. The row stays pending and handed off, so whoever meets it later (a resumed call
        // whose checkpoint lacks this result, the sweeper) asks the delivery lookup rather than sending again.
        const notRecorded = (error: unknown) =>
          options.logger?.warn(
            { callKey: ctx.callKey, err: messageOf(error) },
            'email sent but not recorded',
          );
        if (options.ledger.recordSent) {
          void options.ledger.recordSent(ctx.callKey, response).catch(notRecorded);
        } else {
          await options.ledger.markSent(ctx.callKey, response).catch(notRecorded);
        }
        return sentObservation(address, messageId);
      }

      /**
       * A row held by another attempt, or left by one that stopped. Waits while that attempt may be alive,
       * then settles the row: takes over one never handed off, asks the lookup about one that was. Returns the
       * observation, or 'claim_again' when the row is free to claim (or was settled meanwhile).
       */
      async function settlePending(
        found: EmailLedgerEntry,
      ): Promise<string | UncertainOutcome | 'claim_again'> {
        let entry = found;
        while (entry.status === 'pending' && entry.ageMs < graceMs) {
          const wait = Math.min(pollMs, graceMs - entry.ageMs);
          try {
            await sleep(wait, ctx.signal);
          } catch {
            return uncertain(entry, 'the call was stopped while an earlier attempt still held it');
          }
          // A ledger that does not answer ages the row by the wait, so the wait still ends.
          const waited = entry;
          const now = await options.ledger
            .get(ctx.callKey)
            .catch(() => ({ ...waited, ageMs: waited.ageMs + wait }));
          if (now === null || (now.status !== 'pending' && now.status !== 'uncertain')) return 'claim_again';
          entry = now;
        }
        if (entry.status === 'pending' && entry.smtpStartedAt === null) {
          // Only while it is still not handed off: the attempt may have woken and sent meanwhile.
          await takeOver(
            entry,
            `${NOT_DELIVERED}: an earlier attempt stopped before reaching the SMTP server`,
            { unstartedOnly: true },
          );
          return 'claim_again';
        }
        const lookup = options.deliveryLookup;
        if (!lookup) return uncertain(entry, 'no delivery lookup is configured (SMTP_LOOKUP_URL)', true);
        let delivered: boolean;
        try {
          delivered = await lookup.delivered(entry.messageId, ctx.signal);
        } catch (error) {
          options.logger?.warn({ callKey: ctx.callKey, err: messageOf(error) }, 'delivery lookup failed');
          return uncertain(entry, `the delivery lookup failed (${messageOf(error)})`, true);
        }
        if (delivered) {
          await record(() =>
            options.ledger.markSent(ctx.callKey, 'delivered (confirmed by lookup after a crash)'),
          );
          return sentObservation(entry.recipient, entry.messageId);
        }
        // It never arrived: release the row and claim it again, under the same cap and lock as a new call.
        await takeOver(entry, `${NOT_DELIVERED} (lookup after the attempt stopped)`);
        return 'claim_again';
      }

      /** Frees the row of an attempt that certainly did not deliver; whoever claims next sends it. */
      async function takeOver(
        entry: EmailLedgerEntry,
        why: string,
        release: { unstartedOnly?: boolean } = {},
      ): Promise<void> {
        try {
          // False when the row moved on meanwhile: the claim that follows reads what it became.
          await options.ledger.release(ctx.callKey, entry.attempt, why, release);
        } catch (error) {
          throw ledgerUnavailable(error);
        }
      }

      /** Not sent again, and said so; `settle` also records the row as uncertain for the sweeper and reports. */
      async function uncertain(
        entry: EmailLedgerEntry,
        why: string,
        settle = false,
      ): Promise<UncertainOutcome> {
        // Only the attempt judged: one that took the row over meanwhile is sending, and stays pending.
        if (settle) await record(() => options.ledger.markUncertain(ctx.callKey, why, entry.attempt));
        return new UncertainOutcome(
          `Delivery uncertain: an earlier attempt of this call to send to ${entry.recipient} stopped before ` +
            `its outcome was recorded, so the email may or may not have gone out. It was not sent again, to ` +
            `avoid a duplicate (message-id ${entry.messageId}). Do not send it again.`,
          { what: `email to ${entry.recipient} (message-id ${entry.messageId})`, why },
        );
      }

      async function settleFailure(error: unknown, attempt: number): Promise<string | UncertainOutcome> {
        const failure = classifySendError(error);
        if (failure.delivery === 'unknown') {
          // Left pending and handed off: after the grace, a lookup (a resumed run's or the sweeper's) settles it.
          await record(() => options.ledger.noteUncertain(ctx.callKey, failure.summary, attempt));
          return new UncertainOutcome(
            `Delivery uncertain: ${failure.summary}. The server may already have the email to ${address}; it ` +
              `will not be sent again by this call (message-id ${messageId}). Do not send it again.`,
            { what: `email to ${address} (message-id ${messageId})`, why: failure.summary },
          );
        }
        // This attempt's claim only: one that was taken over meanwhile must not free the newer attempt's send.
        await record(() => options.ledger.markFailed(ctx.callKey, failure.summary, attempt));
        const message = `${failure.summary}; the email to ${address} was not sent`;
        if (failure.transient)
          throw new TransientToolError(message, { code: 'email_smtp_unavailable', cause: error });
        throw new ToolError('email_smtp_refused', message, { cause: error });
      }

      // A ledger write that fails after the SMTP outcome is known leaves the row pending: later attempts then
      // ask the lookup instead of sending blindly, which is the safe side.
      async function record(write: () => Promise<unknown>): Promise<void> {
        try {
          await write();
        } catch (error) {
          options.logger?.warn({ callKey: ctx.callKey, err: messageOf(error) }, 'email outcome not recorded');
        }
      }
    },
  });
}

const SWEEP_OUTCOMES: Record<EffectSweepOutcome, SweepOutcome> = {
  done: 'sent',
  not_done: 'not_delivered',
  uncertain: 'uncertain',
};

function emailEffectHooks(options: SendEmailToolOptions, graceMs: number): EffectHooks {
  const lookup = options.deliveryLookup;
  return {
    maxPerJob: options.maxPerRun,
    pendingGraceMs: graceMs,
    ...(lookup
      ? {
          // The ref of an email's row is its Message-ID.
          lookup: async (effect, signal) => ({
            happened: await lookup.delivered(effect.ref, signal),
            value: { smtpResponse: 'delivered (confirmed by the sweeper’s lookup)' },
          }),
        }
      : {}),
    onSwept(outcome, effect) {
      const settled = SWEEP_OUTCOMES[outcome];
      options.onSettled?.(settled);
      const fields = { jobId: effect.jobId, callKey: effect.effectKey, messageId: effect.ref };
      if (settled === 'sent') options.logger?.info?.(fields, 'email sweep: delivered, recorded as sent');
      else if (settled === 'not_delivered')
        options.logger?.warn(fields, 'email sweep: email was not delivered');
      else options.logger?.warn(fields, 'email sweep: delivery cannot be known');
    },
  };
}

function pooled(transport: MailSender | MailConnections): MailConnections | undefined {
  return 'acquire' in transport ? transport : undefined;
}

function direct(transport: MailSender | MailConnections): MailSender {
  if ('sendMail' in transport) return transport;
  throw new Error('send_email: a pooled transport sends only on a leased connection');
}

/** `<32 hex characters of sha256(callKey)@domain>`: the same for every attempt of one call. */
export function deriveMessageId(callKey: string, domain: string): string {
  return `<${createHash('sha256').update(callKey).digest('hex').slice(0, 32)}@${domain}>`;
}

function checkFrom(from: string): string {
  // The sender is checked by the recipient rules against its own domain: one plain address, nothing else.
  const parsed = parseRecipient(from, [from.slice(from.lastIndexOf('@') + 1)]);
  if (!parsed.ok) {
    const why = parsed.reason.slice(0, parsed.reason.indexOf('. ') + 1);
    throw new ConfigError('bad_email_from', `EMAIL_FROM=${quote(from)} must be one plain address: ${why}`);
  }
  return parsed.address;
}

function checkSubject(subject: string, maxChars: number): string {
  const forbidden = SUBJECT_FORBIDDEN.exec(subject);
  if (forbidden) {
    const what = /[\r\n\u2028\u2029]/.test(forbidden[0]) ? 'a line break' : 'a control character';
    throw new ToolError(
      'email_subject_refused',
      `the subject contains ${what}; it must be one line of plain text`,
    );
  }
  if (subject.trim() === '') throw new ToolError('email_subject_refused', 'the subject is empty');
  const length = [...subject].length;
  if (length > maxChars) {
    throw new ToolError(
      'email_subject_refused',
      `the subject has ${length} characters; at most ${maxChars} are allowed`,
    );
  }
  return subject;
}

function checkBody(body: string, maxChars: number): string {
  const text = body
    .replace(/\r\n?/g, '\n')
    .replace(BODY_CONTROLS, '')
    .replace(/\p{Cs}/gu, '\uFFFD');
  if (text.trim() === '') throw new ToolError('email_body_refused', 'the body is empty');
  const length = [...text].length;
  if (length > maxChars) {
    throw new ToolError(
      'email_body_refused',
      `the body has ${length} characters; at most ${maxChars} are allowed: shorten it`,
    );
  }
  return text;
}

// What the model is told of a call that sent (or, dry, recorded) its email, whichever attempt of the call did:
// a resumed run sees what the run it continues saw, so its prompts, budget decisions and next steps are the
// same. An attempt that finds the work done says nothing more (the ledger's row tells how it was settled): a
// longer note made every replayed email cost tokens the uninterrupted run never paid.
function sentObservation(recipient: string, messageId: string): string {
  return `Sent to ${recipient} (message-id ${messageId}).`;
}

function dryRunObservation(recipient: string, messageId: string): string {
  return `Dry run: email to ${recipient} recorded but not sent (message-id ${messageId}).`;
}

function differs(entry: EmailLedgerEntry, address: string, subject: string): string {
  if (entry.recipient === address && entry.subject === subject) return '';
  return ` This attempt asked for a different email (to ${address}); it was not sent: one email per call.`;
}

/** The model's input, quoted and cut short, so control characters in it cannot shape the observation. */
function quote(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

function ledgerUnavailable(error: unknown): TransientToolError {
  return new TransientToolError(`the email ledger is unavailable (${messageOf(error)}); nothing was sent`, {
    code: 'email_ledger_unavailable',
    cause: error,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
