// send_email (docs/agents-and-tools.md): one plain-text email to one recipient of an allowed domain, at most once per job
// and call however often the job is retried or resumed.
//
// The checks run cheapest and most certain first: recipient, subject, body; then the email is one effect of the
// general at-most-once mechanism (settleOnce in src/effects/effect-once.ts; its states: docs/side-effects.md):
// the row keyed by the call key holds the Message-ID as its `ref`, recipient and subject as its `detail`; the
// per-job cap, the grace and the delivery lookup are the tool's effect hooks. What is the email's own: a pooled
// connection is leased BEFORE the claim, which is then started in the same write (so a wait for a connection
// never runs under a started mark); a direct transport's claim is started just before the SMTP transaction; a
// send whose delivery is unknown leaves the row pending for the lookup; and the words the model reads.
// The Message-ID is derived from the call key, so every attempt of one call carries the same one.
import { createHash } from 'node:crypto';
import type { SendMailOptions, SentMessageInfo } from 'nodemailer';
import { z } from 'zod';
import {
  EffectCapError,
  EffectLedgerUnavailable,
  notDone,
  settleOnce,
  type OnceLedger,
  type OnceOutcome,
  type OnceRules,
} from '../effects/effect-once.js';
import type { EffectRow } from '../effects/effect-ledger.js';
import { ConfigError, ToolError, TransientToolError } from '../kernel/errors.js';
import type { NeedsApproval } from '../kernel/approval.js';
import type { DeliveryLookup } from './delivery-lookup.js';
import { parseRecipient } from './email-address.js';
import { NOT_DELIVERED, SEND_EMAIL } from './sent-emails.js';
import type { MailConnections, MailLease } from './smtp-pool.js';
import { classifySendError } from './smtp-transport.js';
import {
  defineTool,
  UncertainOutcome,
  type EffectHooks,
  type EffectSweepOutcome,
  type OnceAttempt,
  type Tool,
} from '../kernel/tool.js';

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
  /** The effect ledger (EffectLedger; with `deferDone`, a sent record leaves with those claimed with it). */
  ledger: OnceLedger;
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
  /** Whether an email waits for a person's decision (the tool's `needsApproval`, docs/approvals.md). */
  needsApproval?: NeedsApproval<{ to: string; subject: string; body: string }>;
}

const DEFAULT_PENDING_GRACE_MS = 120_000;
const DEFAULT_PENDING_POLL_MS = 1_000;

/** What a send_email row records as done: the server's reply, or a dry run. */
type EmailRecord = { smtpResponse: string } | { dryRun: true };
/** What an attempt that may not record returns instead: its observation (taken over, or delivery unknown). */
type Unrecorded = { observation: string | UncertainOutcome };

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

  // The cap, the grace and the lookup: the calls' and the worker's sweeper's (which settles pending emails).
  const hooks = emailEffectHooks(options, graceMs);
  return defineTool({
    name: SEND_EMAIL,
    effects: hooks,
    description:
      `Send one plain-text email to one recipient. "to" must be a single bare address at an allowed domain ` +
      `(${allowed}); no names, lists, CC or HTML. At most ${options.maxPerRun} emails per run. Each call ` +
      `sends at most once: if the result says the email was sent or its delivery is uncertain, do not send ` +
      `it again.`,
    parameters,
    timeoutMs: options.timeoutMs ?? Math.max(60_000, graceMs + 30_000),
    ...(options.needsApproval !== undefined ? { needsApproval: options.needsApproval } : {}),
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
      let outcome: OnceOutcome<EmailRecord | Unrecorded>;
      try {
        outcome = await settleOnce<EmailRecord | Unrecorded, MailLease>(
          options.ledger,
          { callKey: ctx.callKey, jobId: ctx.runId, tool: SEND_EMAIL, signal: ctx.signal },
          send,
          {
            ref: messageId,
            detail: { recipient: address, subject },
            // A pooled connection is leased first; without one the claim is started just before SMTP.
            startWithClaim: false,
            ...(connections ? { acquire: (signal: AbortSignal) => connections.acquire(signal) } : {}),
          },
          hooks,
          onceRules(options, ctx.callKey),
        );
      } catch (error) {
        if (error instanceof EffectCapError) {
          throw new ToolError(
            'email_cap_reached',
            `this run already has ${error.count} emails, the most one run may send ` +
              `(EMAIL_MAX_PER_RUN=${options.maxPerRun}); nothing was sent`,
          );
        }
        if (error instanceof EffectLedgerUnavailable) throw ledgerUnavailable(error.cause);
        throw error;
      }
      switch (outcome.kind) {
        case 'made':
          if ('observation' in outcome.value) return outcome.value.observation;
          return 'dryRun' in outcome.value
            ? dryRunObservation(address, messageId)
            : sentObservation(address, messageId);
        case 'found': {
          const row = emailOf(outcome.row);
          const dry = (outcome.value as { dryRun?: unknown } | null)?.dryRun === true;
          // A row an earlier attempt settled says so; one the lookup just found is this call's own news.
          const note = outcome.row.status === 'done' ? differs(row, address, subject) : '';
          return (dry ? dryRunObservation : sentObservation)(row.recipient, row.messageId) + note;
        }
        case 'uncertain': {
          const row = outcome.row ? emailOf(outcome.row) : { recipient: address, messageId, subject };
          return new UncertainOutcome(
            `Delivery uncertain: an earlier attempt of this call to send to ${row.recipient} stopped before ` +
              `its outcome was recorded, so the email may or may not have gone out. It was not sent again, to ` +
              `avoid a duplicate (message-id ${row.messageId}). Do not send it again.`,
            { what: `email to ${row.recipient} (message-id ${row.messageId})`, why: outcome.why },
          );
        }
      }

      /** This attempt holds the row: send, and say what the server said (settleOnce records it). */
      async function send(attempt: OnceAttempt<MailLease>): Promise<EmailRecord | Unrecorded> {
        if (options.dryRun) return { dryRun: true };
        // Abandoned between the claim and the SMTP transaction: give the row back, nothing was sent.
        if (ctx.signal.aborted) {
          throw notDone(
            new ToolError('aborted', 'the call was cancelled; nothing was sent'),
            `${NOT_DELIVERED}: cancelled before sending`,
          );
        }
        // A leased connection's claim was started with it; a direct transport's is marked now.
        const sender = attempt.lease ?? direct(options.transport);
        if (!(await attempt.start())) {
          return {
            observation: `Not sent by this attempt: another attempt of this call took it over (message-id ${messageId}). Do not send it again.`,
          };
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
        // If the record fails (or, deferred, never lands) the server has the message all the same: the model is
        // told the truth, and the row stays pending and started for the lookup, never sent again.
        return { smtpResponse: typeof info.response === 'string' ? info.response : 'accepted' };
      }

      async function settleFailure(error: unknown, attempt: OnceAttempt<MailLease>): Promise<Unrecorded> {
        const failure = classifySendError(error);
        if (failure.delivery === 'unknown') {
          // Left pending and started: after the grace, a lookup (a resumed run's or the sweeper's) settles it.
          await attempt.leavePending(failure.summary);
          return {
            observation: new UncertainOutcome(
              `Delivery uncertain: ${failure.summary}. The server may already have the email to ${address}; it ` +
                `will not be sent again by this call (message-id ${messageId}). Do not send it again.`,
              { what: `email to ${address} (message-id ${messageId})`, why: failure.summary },
            ),
          };
        }
        // Certainly not sent: the row is freed (this attempt's claim only) for a later attempt.
        const message = `${failure.summary}; the email to ${address} was not sent`;
        if (failure.transient) {
          throw notDone(
            new TransientToolError(message, { code: 'email_smtp_unavailable', cause: error }),
            failure.summary,
          );
        }
        throw notDone(new ToolError('email_smtp_refused', message, { cause: error }), failure.summary);
      }
    },
  });
}

/** send_email's words for the general state machine (settleOnce): what its users read in results and reports. */
function onceRules(options: SendEmailToolOptions, callKey: string): OnceRules {
  const lookup = options.deliveryLookup;
  const warn = (message: string) => (error: unknown) =>
    options.logger?.warn({ callKey, err: messageOf(error) }, message);
  return {
    pollMs: options.pendingPollMs ?? DEFAULT_PENDING_POLL_MS,
    // A young pending row may be another attempt still sending: wait for it, lookup or not.
    waitWithoutLookup: true,
    noLookupWhy: 'no delivery lookup is configured (SMTP_LOOKUP_URL)',
    lookupFailedWhy: (message) => `the delivery lookup failed (${message})`,
    unstartedNote: `${NOT_DELIVERED}: an earlier attempt stopped before reaching the SMTP server`,
    lookupNotDoneNote: `${NOT_DELIVERED} (lookup after the attempt stopped)`,
    onNotRecorded: warn('email outcome not recorded'),
    ...(lookup
      ? {
          lookup: async (effect, signal) => {
            try {
              const happened = await lookup.delivered(effect.ref, signal);
              return { happened, value: { smtpResponse: 'delivered (confirmed by lookup after a crash)' } };
            } catch (error) {
              warn('delivery lookup failed')(error);
              throw error;
            }
          },
        }
      : {}),
  };
}

/** An email's row as the observations name it: its recipient and subject (the detail) and Message-ID (the ref). */
function emailOf(row: EffectRow): { recipient: string; subject: string; messageId: string } {
  const detail = row.detail ?? {};
  return {
    recipient: typeof detail['recipient'] === 'string' ? detail['recipient'] : '',
    subject: typeof detail['subject'] === 'string' ? detail['subject'] : '',
    messageId: row.ref,
  };
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

function differs(entry: { recipient: string; subject: string }, address: string, subject: string): string {
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
