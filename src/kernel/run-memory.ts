// The run's memory: what the next prompt shows, and when it is cut down. The rules that keep the transcript the
// model's own are memory.ts's; this keeps the run's side of them: its state and its decisions. The loop asks it
// for prompts and hands it each finished turn; it never calls a model itself (a summary is written through the
// loop's `summarize`, so budgets and traces see that call like any other).
import { addUsage, usageOf, type Budget } from './budget.js';
import * as D from './defaults.js';
import {
  clearableResults,
  clearResult,
  deterministicSummary,
  foldCut,
  latestTurnStart,
  renderRunForReader,
  summaryMessage,
  summaryRequestMessages,
} from './memory.js';
import type { ChatMessage, ToolSpec } from './messages.js';
import type { ModelCallResult } from './model-call.js';
import { truncateChars } from './truncate.js';
import type { RunState, TraceEvent } from './types.js';
import type { ModelPrice } from './pricing.js';
import { countMessageTokens, type TokenCounter } from './tokens.js';

export interface RunMemoryOptions {
  /** The run's state: the memory reads and writes its history and summary in place. */
  state: RunState;
  /** The system prompt and the task, first in every prompt. */
  pinned: readonly ChatMessage[];
  window: number | 'auto';
  contextTokens: number;
  /** max_tokens of a normal step. */
  completionTokens: number;
  /** The tool definitions a step's request carries (counted in its prompt). */
  requestTools: () => readonly ToolSpec[] | undefined;
  /** A prompt's tokens as the run estimates them (calibrated on the provider's counts). */
  estimate: (messages: readonly ChatMessage[], tools: readonly ToolSpec[] | undefined) => number;
  count: TokenCounter;
  /** The prices the run bills at (the ones it started with). */
  price: () => ModelPrice;
  budget: () => Budget;
}

/** What the loop gives the memory before each step. */
export interface FoldHooks {
  /** Whether the budget can pay the next step on the prompt as it is (and a final turn after it). */
  stepAffordable: () => boolean;
  /** One model call writing a summary of earlier steps from these messages. */
  summarize: (messages: ChatMessage[]) => Promise<ModelCallResult>;
}

/** What the memory took out of the prompt before a step: its trace events, and whether a model wrote a summary. */
export interface MemoryChange {
  events: TraceEvent[];
  paidSummary: boolean;
}

export class RunMemory {
  /** The pinned messages and the summary message, made again only when the summary changes. */
  private head: { summary: string | null; messages: readonly ChatMessage[] } | null = null;

  /** A message's tokens, remembered per message: summaries are made before every step from the same messages. */
  private readonly tokensOf = (message: ChatMessage): number => countMessageTokens(message, this.o.count);

  constructor(private readonly o: RunMemoryOptions) {}

  private get state(): RunState {
    return this.o.state;
  }

  /** The next step's prompt: the system prompt, the task, the summary if any, then the turns as they were. */
  prompt(): ChatMessage[] {
    return [...this.headMessages(), ...this.state.history];
  }

  private headMessages(): readonly ChatMessage[] {
    const summary = this.state.summary;
    if (this.head?.summary === summary) return this.head.messages;
    const messages = summary ? [...this.o.pinned, summaryMessage(summary)] : [...this.o.pinned];
    this.head = { summary, messages };
    return messages;
  }

  /** A turn whose reply was no valid action: kept as it was, with what was wrong, so the model can fix it. */
  recordInvalidTurn(reply: ChatMessage, observation: string): void {
    this.state.history.push(reply, { role: 'user', content: observation });
  }

  /** A finished turn: the model's message as it came, then each result in the role that answers it. */
  recordTurn(turn: readonly ChatMessage[]): void {
    this.state.history.push(...turn);
  }

  /**
   * Before each step. The whole transcript is kept (`auto`) until the next step would pass the context share or
   * the budget: then old results are cleared in place, and past that old turns summarised. The sliding window
   * folds what is older than it into the rolling summary (by the model when that is worth it).
   */
  async fold(hooks: FoldHooks): Promise<MemoryChange | null> {
    if (this.o.window === 'auto') return this.fitAuto(hooks.stepAffordable);
    const cut = foldCut(this.state.history, this.o.window);
    if (cut === null) return null;
    const folded = this.state.history.slice(0, cut);
    let summary: string | null = null;
    let spent: { usage: ModelCallResult['usage']; attempts: number } = {
      usage: { promptTokens: 0, completionTokens: 0 },
      attempts: 0,
    };
    const madeCall = this.worthModelSummary(folded);
    if (madeCall) {
      const call = await hooks.summarize(summaryRequestMessages(this.state.task, this.state.summary, folded));
      spent = call;
      if (call.ok) summary = call.completion.message.content?.trim() || null;
    }
    this.state.summary = summary ?? deterministicSummary(this.state.summary, folded, this.tokensOf);
    this.state.history = this.state.history.slice(cut);
    return {
      events: [
        {
          type: 'fold',
          messages: folded.length,
          summary: truncateChars(this.state.summary, D.TRACE_OBSERVATION_MAX_CHARS),
          byModel: summary !== null,
          modelCalls: spent.attempts,
          promptTokens: spent.usage.promptTokens,
          completionTokens: spent.usage.completionTokens,
          costUsd: usageOf(spent.usage, this.o.price()).costUsd,
        },
      ],
      // A fold without a model call is redone identically on resume: only a paid summary needs saving now.
      paidSummary: madeCall,
    };
  }

  /**
   * The prompt with the earlier turns summarised (deterministically, into the assistant's summary): all but the
   * latest turn, which keeps what was just seen as it was, or all of them (the smallest prompt that still says
   * what was done). Null when there is nothing to summarise.
   */
  compactPrompt(keepLatestTurn: boolean): { messages: ChatMessage[]; summary: ChatMessage } | null {
    const history = this.state.history;
    const cut = keepLatestTurn ? latestTurnStart(history) : history.length;
    if (cut <= 0) return null;
    const summary = this.compactSummary(history.slice(0, cut));
    return { messages: [...this.o.pinned, summary, ...history.slice(cut)], summary };
  }

  /** The last compact summary made, and what it was made of. */
  private compacted: {
    previous: string | null;
    folded: readonly ChatMessage[];
    summary: ChatMessage;
  } | null = null;

  /**
   * The summary of these messages after the run's summary. The final turn's reserve asks for it before every
   * step, mostly of the same messages: messages are never changed in place, so the same messages in the same
   * order (and the same earlier summary) make the same summary, and the same message object keeps its token
   * count remembered.
   */
  private compactSummary(folded: readonly ChatMessage[]): ChatMessage {
    const last = this.compacted;
    const previous = this.state.summary;
    if (
      last &&
      last.previous === previous &&
      last.folded.length === folded.length &&
      last.folded.every((message, i) => message === folded[i])
    ) {
      return last.summary;
    }
    const summary = summaryMessage(deterministicSummary(previous, folded, this.tokensOf));
    this.compacted = { previous, folded, summary };
    return summary;
  }

  /**
   * The answer of a run that cannot pay for a model-written one: what it did, from its own records (the tools
   * it ran and what they returned), so the work the budget paid for is not lost. For the reader of the result,
   * never sent to the model.
   */
  deterministicAnswer(reason: string): string | null {
    if (this.state.toolCalls === 0) return null;
    const parts = [
      ...(this.state.summary ? [`summary: ${this.state.summary}`] : []),
      ...(this.state.history.length ? [renderRunForReader(this.state.history)] : []),
    ];
    return truncateChars(
      `No final answer was written (the run stopped: ${reason}). What it did:\n${parts.join('\n')}`,
      D.DETERMINISTIC_ANSWER_MAX_CHARS,
    );
  }

  /**
   * The limits of the whole transcript: when the next step would pass the context share or cannot be paid, the
   * oldest results are cleared in place, one at a time, until it fits (the latest turn's results, not yet read,
   * stay); when it still passes the context share, every turn but the latest becomes the summary.
   */
  private fitAuto(stepAffordable: () => boolean): MemoryChange | null {
    const tools = this.o.requestTools();
    const tooBig = () => this.tooBig(tools);
    if (this.state.history.length === 0 || (!tooBig() && stepAffordable())) return null;
    // What the context share needs is cleared for good, whatever the budget says: undone, the next request (the
    // final turn's) would send those results again in full, past the share.
    const forContext = tooBig() ? this.clearOldResults(tooBig) : null;
    let forBudget: ClearEvent | null = null;
    if (!tooBig() && !stepAffordable()) {
      const before = [...this.state.history];
      forBudget = this.clearOldResults(() => !stepAffordable());
      if (!stepAffordable()) {
        // The budget cannot pay for another step even without the old results: they are worth more to the final
        // answer than the step they would not buy.
        this.state.history = before;
        forBudget = null;
      }
    }
    const cleared = mergeClears(forContext, forBudget);
    const events: TraceEvent[] = cleared ? [cleared] : [];
    if (tooBig()) {
      const folded = this.summariseAllButLatest();
      if (folded) events.push(folded);
    }
    return events.length > 0 ? { events, paidSummary: false } : null;
  }

  /**
   * Clears the fewest oldest results after which `over` is false (all of them when it stays true). Ahead in steps
   * that double, then back by halves: each `over` estimates the whole prompt, so asking it after every result made
   * a clearing of many results quadratic in the run (1.4 s for 4,000 turns, on the event loop every run shares).
   */
  private clearOldResults(over: () => boolean): ClearEvent | null {
    const history = this.state.history;
    const found = clearableResults(history, latestTurnStart(history));
    const originals = found.map(({ index }) => history[index]!);
    // Made once each, when first needed: a new message, not an edit (token counts are remembered per message).
    const cleared: ReturnType<typeof clearResult>[] = [];
    const clearedAt = (i: number) =>
      (cleared[i] ??= clearResult(originals[i]!, found[i]!.tools, this.o.count));
    let applied = 0;
    const clearFirst = (k: number) => {
      for (let i = Math.min(k, applied); i < Math.max(k, applied); i++) {
        history[found[i]!.index] = i < k ? clearedAt(i).message : originals[i]!;
      }
      applied = k;
    };
    // `over` holds with `low` results cleared; the search ends at the first count where it does not.
    let low = 0;
    for (let ahead = 1; applied < found.length; ahead *= 2) {
      clearFirst(Math.min(found.length, applied + ahead));
      if (!over()) break;
      low = applied;
    }
    for (let high = applied; high - low > 1;) {
      const middle = Math.floor((low + high) / 2);
      clearFirst(middle);
      if (over()) low = middle;
      else high = middle;
      if (high - low <= 1) clearFirst(high);
    }
    if (applied === 0) return null;
    const tools = new Set(found.slice(0, applied).flatMap((result) => result.tools));
    const tokens = cleared.slice(0, applied).reduce((sum, c) => sum + c.tokens, 0);
    return { type: 'clear', results: applied, tokens, tools: [...tools] };
  }

  private summariseAllButLatest(): TraceEvent | null {
    const cut = latestTurnStart(this.state.history);
    if (cut <= 0) return null;
    const folded = this.state.history.slice(0, cut);
    this.state.summary = deterministicSummary(this.state.summary, folded, this.tokensOf);
    this.state.history = this.state.history.slice(cut);
    return {
      type: 'fold',
      messages: folded.length,
      summary: truncateChars(this.state.summary, D.TRACE_OBSERVATION_MAX_CHARS),
      byModel: false,
      modelCalls: 0,
      promptTokens: 0,
      completionTokens: 0,
      costUsd: 0,
    };
  }

  /** Whether the next step's prompt would pass the share of the context window the memory keeps to. */
  private tooBig(tools: readonly ToolSpec[] | undefined): boolean {
    const limit = this.o.contextTokens * D.CONTEXT_FOLD_SHARE;
    return this.o.estimate(this.prompt(), tools) + this.o.completionTokens > limit;
  }

  /** A model summary only pays when there is much to fold and the budget can afford it and a step after. */
  private worthModelSummary(folded: readonly ChatMessage[]): boolean {
    const foldedTokens = folded.reduce((sum, m) => sum + countMessageTokens(m, this.o.count), 0);
    if (foldedTokens < D.SUMMARY_MIN_TOKENS) return false;
    const summaryPrompt = this.o.estimate(
      summaryRequestMessages(this.state.task, this.state.summary, folded),
      undefined,
    );
    const nextStep = this.o.estimate(this.prompt(), this.o.requestTools());
    const afterSummary = {
      promptTokens: summaryPrompt + nextStep,
      completionTokens: D.SUMMARY_MAX_TOKENS + this.o.completionTokens,
    };
    const total = addUsage(this.state.usage, afterSummary);
    const usage = usageOf(total, this.o.price());
    const budget = this.o.budget();
    return usage.totalTokens <= budget.maxTokens && usage.costUsd <= budget.maxCostUsd;
  }
}

type ClearEvent = Extract<TraceEvent, { type: 'clear' }>;

/** One event for a step's clearings, for the context and then for the budget. */
function mergeClears(a: ClearEvent | null, b: ClearEvent | null): ClearEvent | null {
  if (!a || !b) return a ?? b;
  const tools = [...new Set([...a.tools, ...b.tools])];
  return { type: 'clear', results: a.results + b.results, tokens: a.tokens + b.tokens, tools };
}
