// The worker's half of notes across tasks (docs/notes.md): a new run of an agent with notes on starts with the
// notes most relevant to its task (the kernel puts them at the head of its transcript as a `recall_notes` call and
// its result) and may look up more with the `recall_notes` tool (and, when its agent lets it, keep notes of its own
// with `keep_note`); a run that ended leaves what its trace shows it learned (corrections of its own failed calls),
// a failed run weighs down the notes it was given, and a correction the run found wrong is dropped.
import { z } from 'zod';
import {
  KEEP_NOTE_TOOL,
  recallOutput,
  recallQuery,
  RECALL_TOOL,
  type RecalledNote,
  type RunRecall,
} from '../kernel/recalled-notes.js';
import type { CallGate } from '../kernel/call-gate.js';
import { withSideSpend, type SidePurse } from '../kernel/side-spend.js';
import { defineTool, type Tool } from '../kernel/tool.js';
import { tokenCounterFor, type TokenCounter } from '../kernel/tokens.js';
import type { Budget } from '../kernel/budget.js';
import type { AgentResult, SideSpend, StepTrace } from '../kernel/types.js';
import type { Logger } from '../logging/logger.js';
import { contradictedNotes, deriveNotes } from '../notes/derive-notes.js';
import { ToolError } from '../kernel/errors.js';
import { NOTE_MAX_CHARS, noteText, type Note, type NoteStore } from '../notes/note.js';
import { noteTextHash } from '../notes/notes-store.js';
import type { NoteEmbedder } from '../notes/note-embedder.js';
import { NotesPurse } from './notes-purse.js';
import type { RunConfig } from './run-config.js';

export type NotesSettings = NonNullable<RunConfig['notes']>;

/** Whose notes a run reads and writes: never another agent's, never another tenant's. */
export interface NotesOwner {
  agent: string;
  /** '' for a task without a tenant. */
  tenant: string;
}

const TOOL_QUERY_MAX = 500;
export { KEEP_NOTE_TOOL };
/**
 * Notes a model may keep in one run (one attempt of it) at most, like the corrections derived from it: a model that
 * keeps calling keep_note (a loop, an injection) cannot fill its agent's notes and push the others out.
 */
export const MAX_KEPT_PER_RUN = 10;
/**
 * The share of a new run's budget (tokens, dollars and time) its opening recall's embedding may take at most: the
 * run's turns need the rest. An embedding of the task costs a few hundred tokens at cents per million.
 */
export const OPENING_EMBEDDING_SHARE = 0.1;

/** What an embedding outside the kernel is paid with: the run's budget, the fleet's gate, the run's signal. */
export interface NotesPayment {
  budget: Budget;
  gate?: CallGate;
  signal?: AbortSignal;
  /** Milliseconds a wait at the gate may take. */
  timeLeftMs: () => number;
}

const NEVER = new AbortController().signal;
const SILENT: Pick<Logger, 'warn'> = { warn: () => undefined };

/** One run's notes: the `recall_notes` tool it may call, the opening recall of a new run, what it leaves. */
export class NotesSession {
  /** The ids of the notes the run was shown, by the opening recall or its own `recall_notes` calls. */
  readonly used = new Set<string>();
  /** The texts (their hashes) this run kept with keep_note: held before the store answers, so calls made together count. */
  private readonly kept = new Set<string>();
  private readonly recallTool: Tool;
  private readonly keepTool: Tool | null;
  /**
   * What the opening recall's embedding cost, once `opening` is done (undefined when none was made): the kernel is
   * handed it (`AgentRunInput.embeddings`) and counts it from the run's start, in its budget and its usage.
   */
  openingEmbeddings: SideSpend | undefined;

  constructor(
    private readonly store: NoteStore,
    private readonly count: TokenCounter,
    private readonly owner: NotesOwner,
    private readonly settings: NotesSettings,
    /** The run's task text: what the opening recall and a query-less `recall_notes` look notes up for. */
    private readonly task: string,
    /** Null: FULLTEXT search only (no NOTES_EMBEDDING_MODEL). */
    private readonly embedder: NoteEmbedder | null = null,
    private readonly log: Pick<Logger, 'warn'> = SILENT,
  ) {
    this.recallTool = defineTool({
      name: RECALL_TOOL,
      description:
        'Notes kept from earlier runs of this agent, as data: the most relevant to query (default: the task).',
      parameters: z.object({ query: z.string().min(1).max(TOOL_QUERY_MAX).optional() }),
      readOnly: true,
      execute: async ({ query }, ctx) =>
        recallOutput(await this.recall(query ?? task, ctx.purse, ctx.signal)),
    });
    this.keepTool = settings.write ? this.keepNoteTool() : null;
  }

  /**
   * The run's own tools: `recall_notes` only for a run that opened with notes (an agent with none yet is not
   * offered a tool that could find nothing, and pays no prompt tokens for it), `keep_note` for an agent whose model
   * may write notes. The same on every resume of the run: `opened` is whether its transcript has the recall.
   */
  tools(opened: boolean): Tool[] {
    return [...(opened ? [this.recallTool] : []), ...(this.keepTool ? [this.keepTool] : [])];
  }

  /**
   * A note in the model's words, kept for the agent's later runs: a fact it found or a mistake it wants to avoid.
   * Not read-only: it changes what later runs read, so a policy that asks before side effects asks before it too.
   * The same text kept again is the same note.
   */
  private keepNoteTool(): Tool {
    return defineTool({
      name: KEEP_NOTE_TOOL,
      description:
        'Keeps a short note for later runs of this agent: a fact about the data or tools, or a mistake to avoid ' +
        `(at most ${NOTE_MAX_CHARS} characters). Later runs read it as data from this run.`,
      parameters: z.object({ text: z.string().trim().min(1).max(NOTE_MAX_CHARS) }),
      execute: async ({ text }, ctx) => {
        const hash = noteTextHash(noteText(text));
        const again = this.kept.has(hash);
        if (!again && this.kept.size >= MAX_KEPT_PER_RUN)
          throw new ToolError(
            'note_limit',
            `a run keeps at most ${MAX_KEPT_PER_RUN} notes; this one was not kept`,
          );
        this.kept.add(hash);
        const expiresAt = new Date(Date.now() + this.settings.keepDays * 86_400_000);
        try {
          const embedding = await this.embed(noteText(text), ctx.purse, ctx.signal);
          const [id] = await this.store.add([
            {
              ...this.owner,
              kind: 'model',
              text,
              sourceJobId: ctx.runId,
              sourceStep: ctx.step,
              expiresAt,
              ...(embedding ? { embedding } : {}),
            },
          ]);
          return `kept as ${id}`;
        } catch (error) {
          if (!again) this.kept.delete(hash);
          throw error;
        }
      },
    });
  }

  /**
   * The notes a new run opens with; none when the store cannot answer (the run goes on without). With an embedding
   * model, the task's embedding is paid from a share of the run's budget (OPENING_EMBEDDING_SHARE) and booked with
   * the fleet's gate; what it cost is handed to the kernel, which counts it from the run's start.
   */
  async opening(log: Logger, pay?: NotesPayment): Promise<RunRecall | undefined> {
    const purse =
      this.embedder && pay
        ? new NotesPurse(
            {
              tokens: Math.floor(pay.budget.maxTokens * OPENING_EMBEDDING_SHARE),
              costUsd: pay.budget.maxCostUsd * OPENING_EMBEDDING_SHARE,
            },
            pay.gate,
            log,
            pay.timeLeftMs,
          )
        : undefined;
    try {
      // An agent with no notes yet pays nothing for them: no embedding of a task there is nothing to compare with.
      if (purse && (await this.store.list({ ...this.owner, limit: 1 })).length === 0) return undefined;
      // Its time too is a share of the run's: a slow endpoint falls back to FULLTEXT, the run keeps the rest.
      const signal = pay
        ? AbortSignal.any([
            pay.signal ?? NEVER,
            AbortSignal.timeout(Math.max(1, Math.floor(pay.budget.deadlineMs * OPENING_EMBEDDING_SHARE))),
          ])
        : NEVER;
      const notes = await this.recall(this.task, purse, signal);
      return notes.length > 0 ? { query: recallQuery(this.task), notes } : undefined;
    } catch (err) {
      log.warn({ err }, 'could not recall notes: the run starts without');
      return undefined;
    } finally {
      await purse?.settled();
      this.openingEmbeddings = spentBy(purse);
    }
  }

  /**
   * After a run's final result: the notes its steps show it learned, kept for its agent and tenant; and, when its
   * model failed it, the notes it was shown weigh less next time. The result names every note it was shown. Never fails
   * the run: a store error is logged.
   */
  async close(
    run: {
      jobId: string;
      traces: readonly StepTrace[];
      result: AgentResult;
      /** Whether a tool's results are kept as facts (its `keepsFacts`). */
      keepsFacts?: (tool: string) => boolean;
    },
    log: Logger,
    pay?: NotesPayment,
  ): Promise<void> {
    const used = new Set([...(run.result.notesUsed ?? []), ...this.used]);
    if (used.size > 0) run.result.notesUsed = [...used];
    try {
      const expiresAt = new Date(Date.now() + this.settings.keepDays * 86_400_000);
      const { jobId, keepsFacts } = run;
      const drafts = deriveNotes(run.traces, { ...this.owner, jobId, expiresAt, keepsFacts });
      if (drafts.length > 0) await this.store.add(await this.embedDrafts(drafts, run.result, log, pay));
      if (failedByItsModel(run.result) && used.size > 0) await this.store.weighDown([...used]);
      await this.dropContradicted(run.traces, used, keepsFacts);
    } catch (err) {
      log.warn({ err }, "could not keep the run's notes");
    }
  }

  /**
   * The run's notes with their embeddings, each paid from what is left of the run's budget (and booked with the
   * gate) while that pays; a note it cannot pay for is kept without one. What they cost joins the result's usage.
   */
  private async embedDrafts<D extends { text: string; embedding?: number[] }>(
    drafts: D[],
    result: AgentResult,
    log: Logger,
    pay: NotesPayment | undefined,
  ): Promise<D[]> {
    if (!this.embedder || !pay) return drafts;
    // An attempt that ends to be retried publishes no result: what it paid here would be in no run's usage. Its
    // notes are kept without an embedding (a later run that learns them again adds one).
    if (result.status === 'failed' && result.error?.retryable) return drafts;
    const left = {
      tokens: Math.max(0, pay.budget.maxTokens - result.usage.totalTokens),
      costUsd: Math.max(0, pay.budget.maxCostUsd - result.usage.costUsd),
    };
    const purse = new NotesPurse(left, pay.gate, log, pay.timeLeftMs);
    // All of them within the time given (a slow endpoint holds the run's result back no longer); the rest are kept
    // without an embedding.
    const signal = AbortSignal.any([pay.signal ?? NEVER, AbortSignal.timeout(Math.max(1, pay.timeLeftMs()))]);
    const embedded: D[] = [];
    try {
      for (const draft of drafts) {
        const embedding = await this.embedder.embed(noteText(draft.text), purse, signal, log);
        embedded.push(embedding ? { ...draft, embedding } : draft);
      }
    } finally {
      await purse.settled();
      const spent = spentBy(purse);
      if (spent) result.usage = withSideSpend(result.usage, spent);
    }
    return embedded;
  }

  /** The embedding of a text, paid from `purse`; undefined without an embedding model or when it fails. */
  private embed(
    text: string,
    purse: SidePurse | undefined,
    signal: AbortSignal,
  ): Promise<number[] | undefined> {
    return this.embedder ? this.embedder.embed(text, purse, signal, this.log) : Promise.resolve(undefined);
  }

  /**
   * Notes the run was shown and found wrong: a correction whose arguments failed, a fact whose call returned
   * something else. Looked up only when the run has such evidence: a failed call, or a call of a fact tool.
   */
  private async dropContradicted(
    traces: readonly StepTrace[],
    used: ReadonlySet<string>,
    keepsFacts: ((tool: string) => boolean) | undefined,
  ): Promise<void> {
    const evidence = traces.some((t) => t.actions.some((a) => !a.ok || (keepsFacts?.(a.tool) ?? false)));
    if (used.size === 0 || !evidence) return;
    const shown = (await Promise.all([...used].map((id) => this.store.get(id)))).filter(
      (note): note is Note => note !== null,
    );
    for (const id of contradictedNotes(traces, shown)) await this.store.forget(id);
  }

  /**
   * The most relevant notes that fit the token allowance, counted as the model is shown them (the recall's result,
   * without the ids); each counted as used.
   */
  private async recall(
    text: string,
    purse: SidePurse | undefined,
    signal: AbortSignal,
  ): Promise<RecalledNote[]> {
    const embedding = await this.embed(text, purse, signal);
    const found = await this.store.recall({
      ...this.owner,
      text,
      limit: this.settings.recall,
      ...(embedding ? { embedding } : {}),
    });
    const picked: RecalledNote[] = [];
    for (const note of found) {
      const shown = asRecalled(note);
      if (this.count(recallOutput([...picked, shown])) > this.settings.maxTokens) break;
      picked.push(shown);
    }
    if (picked.length > 0) {
      picked.forEach((n) => this.used.add(n.id));
      await this.store.markUsed(picked.map((n) => n.id));
    }
    return picked;
  }
}

/**
 * A run that failed for what its model did (it repeated itself, gave no valid answer), which may be what its notes
 * led it to. Not an outage, a tool away, a bad key or an effect left uncertain: those say nothing of its notes,
 * and a job fails that way once an attempt, so three attempts through one outage would have deleted them.
 */
function failedByItsModel(result: AgentResult): boolean {
  return result.status === 'failed' && result.error?.kind === 'model_behavior';
}

/** The notes of a fleet's runs: a session per run of an agent with notes on. */
export class RunNotes {
  constructor(
    private readonly store: NoteStore,
    /** Counts for a run whose model is not named. */
    private readonly count: TokenCounter,
    /** Null: FULLTEXT search only (no NOTES_EMBEDDING_MODEL). */
    private readonly embedder: NoteEmbedder | null = null,
  ) {}

  /**
   * `model`: the run's, whose tokens the allowance is counted in (as its prompt is): tokenizers differ several
   * times over on some scripts, so the worker's default model's count could let in notes past the allowance.
   */
  session(
    owner: NotesOwner,
    settings: NotesSettings,
    task: string,
    model?: string,
    log: Pick<Logger, 'warn'> = SILENT,
  ): NotesSession {
    const count = model === undefined ? this.count : tokenCounterFor(model);
    return new NotesSession(this.store, count, owner, settings, task, this.embedder, log);
  }
}

function spentBy(purse: NotesPurse | undefined): SideSpend | undefined {
  return purse && purse.spent.calls > 0 ? purse.spent : undefined;
}

function asRecalled(note: Note): RecalledNote {
  return {
    id: note.id,
    kind: note.kind,
    learned: note.createdAt.toISOString().slice(0, 10),
    text: note.text,
  };
}

/** The agent and tenant a task's notes belong to. */
export function notesOwner(agent: { name: string }, task: { tenant?: string }): NotesOwner {
  return { agent: agent.name, tenant: task.tenant ?? '' };
}
