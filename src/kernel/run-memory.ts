// The memory policy of one run: what the next prompt shows, and when and how the conversation is folded.
// Under `auto` (the default) every finished turn becomes facts appended to the prompt when that pays at the
// model's prices, and the prompt is only cut down near the context limit or the budget; under a number, the
// sliding window folds older messages into a rolling summary. The pure pieces (facts, summaries, the dollar
// arithmetic of a fold) are in memory.ts; this keeps the run's side of them: its state and its decisions.
// The loop asks it for prompts and hands it each finished turn; it never calls a model itself (a summary is
// written through the loop's `summarize`, so budgets and traces see that call like any other).
import { addUsage, usageOf, type Budget } from './budget.js';
import * as D from './defaults.js';
import {
  deterministicSummary,
  factShowing,
  factsMessage,
  foldCut,
  foldPays,
  invalidTurnFact,
  renderForSummary,
  summaryRequestMessages,
  turnFacts,
  type TurnCall,
} from './memory.js';
import type { ChatMessage, ToolSpec } from './messages.js';
import type { ModelCallResult } from './model-call.js';
import { truncateChars } from './truncate.js';
import type { RunState, TraceEvent } from './types.js';
import type { ModelPrice } from './pricing.js';
import { countAppendedMessageTokens, countMessageTokens, type TokenCounter } from './tokens.js';

export interface RunMemoryOptions {
  /** The run's state: the memory reads and writes its history, summary and facts in place. */
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
  /** The model's prices as the run was given them, and those it bills at (the ones it started with). */
  inputPrice: ModelPrice;
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

/** A fold of the sliding window: its trace event, and whether a model was paid for its summary. */
export interface WindowFold {
  event: TraceEvent;
  paidSummary: boolean;
}

export class RunMemory {
  /** Fact messages by their text: a block's message is made (and its tokens counted) once. */
  private readonly factMessages = new Map<string, ChatMessage>();
  /** The last stable part made, and the summary and blocks it was made of. */
  private stable: { summary: string | null; facts: string[]; messages: readonly ChatMessage[] } | null = null;

  constructor(private readonly o: RunMemoryOptions) {}

  get auto(): boolean {
    return this.o.window === 'auto';
  }

  private get state(): RunState {
    return this.o.state;
  }

  /** The next step's prompt. */
  prompt(): ChatMessage[] {
    return [...this.stablePart(), ...this.state.history];
  }

  /**
   * What stays byte-identical from step to step: pinned messages, the summary, the facts blocks in order. Made
   * again only when the summary or a block changed (it is asked for several times a step); the same message
   * objects keep their counts.
   */
  stablePart(): readonly ChatMessage[] {
    const summary = this.state.summary;
    const facts = this.state.facts ?? [];
    const made = this.stable;
    if (made && made.summary === summary && sameBlocks(made.facts, facts)) return made.messages;
    const messages: ChatMessage[] = [...this.o.pinned];
    if (summary) messages.push({ role: 'user', content: `Summary of earlier steps:\n${summary}` });
    for (const block of facts) messages.push(this.factMessage(block));
    this.stable = { summary, facts: [...facts], messages };
    return messages;
  }

  /** A turn whose reply was no valid action: kept verbatim, with what was wrong, so the model can fix it. */
  recordInvalidTurn(step: number, reply: ChatMessage, observation: string): void {
    this.state.history.push(reply, { role: 'user', content: observation });
    if (this.auto) this.noteHistoryFact(invalidTurnFact(step, observation));
  }

  /** A finished turn of tool calls: its messages as sent, and what each call did. */
  recordTurn(step: number, turn: ChatMessage[], calls: readonly (TurnCall & { ok: boolean })[]): void {
    if (!this.auto) {
      this.state.history.push(...turn);
      return;
    }
    const facts = turnFacts(step, calls, (output) => factShowing(this.state.facts ?? [], output));
    this.appendTurn(
      turn,
      facts,
      calls.some((c) => !c.ok),
    );
  }

  /**
   * Before each step. The sliding window folds what is older than it into the rolling summary (by the model
   * when that is worth it); the auto memory only acts at its limits (fitAutoMemory).
   */
  async fold(hooks: FoldHooks): Promise<WindowFold | null> {
    if (this.o.window === 'auto') {
      this.fitAutoMemory(hooks.stepAffordable);
      return null;
    }
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
    this.state.summary = summary ?? deterministicSummary(this.state.summary, folded);
    this.state.history = this.state.history.slice(cut);
    return {
      event: {
        type: 'fold',
        messages: folded.length,
        summary: truncateChars(this.state.summary, D.TRACE_OBSERVATION_MAX_CHARS),
        byModel: summary !== null,
        modelCalls: spent.attempts,
        promptTokens: spent.usage.promptTokens,
        completionTokens: spent.usage.completionTokens,
        costUsd: usageOf(spent.usage, this.o.inputPrice).costUsd,
      },
      // A fold without a model call is redone identically on resume: only a paid summary needs saving now.
      paidSummary: madeCall,
    };
  }

  /**
   * The prompt with the history folded into a deterministic summary: all but the latest turn (which keeps
   * what was just seen verbatim), or all of it (the smallest prompt that still says what was done). Null
   * when there is nothing to fold.
   */
  compactPrompt(keepLatestTurn: boolean): { messages: ChatMessage[]; summary: ChatMessage } | null {
    const cut = keepLatestTurn ? foldCut(this.state.history, 0) : this.state.history.length;
    if (cut === null || cut === 0) return null;
    if (this.auto) {
      // Every result stays: the turns folded become one more facts block.
      const turnsFolded = this.state.history.slice(0, cut).filter((m) => m.role === 'assistant').length;
      const noted = this.state.historyFacts ?? [];
      const text =
        noted.length === this.state.history.filter((m) => m.role === 'assistant').length
          ? noted.slice(0, turnsFolded).join('\n')
          : renderForSummary(this.state.history.slice(0, cut));
      const summary = factsMessage([text]);
      return { messages: [...this.stablePart(), summary, ...this.state.history.slice(cut)], summary };
    }
    const text = deterministicSummary(this.state.summary, this.state.history.slice(0, cut));
    const summary: ChatMessage = { role: 'user', content: `Summary of earlier steps:\n${text}` };
    return { messages: [...this.o.pinned, summary, ...this.state.history.slice(cut)], summary };
  }

  /**
   * The answer of a run that cannot pay for a model-written one: what it did, from its own records (the tools
   * it ran and what they returned), so the work the budget paid for is not lost.
   */
  deterministicAnswer(reason: string): string | null {
    if (this.state.toolCalls === 0) return null;
    const facts = [
      ...(this.state.facts ?? []),
      ...(this.state.history.length ? [this.historyFactsText()] : []),
    ];
    const done = facts.length > 0 ? facts.join('\n') : (this.state.summary ?? '');
    return truncateChars(
      `No final answer was written (the run stopped: ${reason}). What it did:\n${done}`,
      D.DETERMINISTIC_ANSWER_MAX_CHARS,
    );
  }

  /**
   * The auto memory's limits: the turns still verbatim become facts when the next step cannot be paid or
   * would pass 80 % of the context window with them; past that window with everything folded, the facts
   * themselves are summarized (the newest kept), the only case where results are given up.
   */
  private fitAutoMemory(stepAffordable: () => boolean): void {
    const tools = this.o.requestTools();
    if (this.state.history.length > 0 && (this.tooBig(tools) || !stepAffordable())) {
      this.foldHistoryIntoFacts();
    }
    if (this.tooBig(tools) && (this.state.facts?.length ?? 0) > 0) {
      const blocks = (this.state.facts ?? []).map((block) => factsMessage([block]));
      this.state.summary = deterministicSummary(this.state.summary, blocks);
      this.state.facts = [];
    }
  }

  /** Whether the next step's prompt would pass the share of the context window the auto memory keeps to. */
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

  private factMessage(block: string, extends_?: ChatMessage): ChatMessage {
    let message = this.factMessages.get(block);
    if (!message) {
      message = factsMessage([block]);
      countAppendedMessageTokens(message, extends_, this.o.count);
      this.factMessages.set(block, message);
    }
    return message;
  }

  /** The facts of a turn kept verbatim in the history, in order: one per turn (per assistant message). */
  private noteHistoryFact(fact: string): void {
    (this.state.historyFacts ??= []).push(fact);
  }

  /** The facts of the turns now in the history (rendered from the messages for a state saved without them). */
  private historyFactsText(): string {
    const turns = this.state.history.filter((m) => m.role === 'assistant').length;
    const noted = this.state.historyFacts ?? [];
    if (noted.length === turns) return noted.join('\n');
    return renderForSummary(this.state.history);
  }

  /**
   * Moves every turn of the history into the facts, at the end of the last block: the facts are the last part
   * of the stable prefix, so what is appended to them starts where the history did, and the provider keeps
   * serving from its cache everything before (one message, one header, however many turns).
   */
  private foldHistoryIntoFacts(extra?: string): void {
    const parts = [
      ...(this.state.history.length > 0 ? [this.historyFactsText()] : []),
      ...(extra ? [extra] : []),
    ];
    if (parts.length === 0) return;
    const facts = (this.state.facts ??= []);
    const text = parts.join('\n');
    if (facts.length === 0) facts.push(text);
    else {
      const last = facts.length - 1;
      const before = this.factMessages.get(facts[last]!);
      this.factMessages.clear();
      facts[last] = `${facts[last]}\n${text}`;
      // Counted from the block it extends: only its new lines are tokenized.
      this.factMessage(facts[last], before);
    }
    this.state.history = [];
    delete this.state.historyFacts;
  }

  /**
   * A finished turn under the auto memory. The turns kept verbatim so far are folded into facts when that
   * pays; the new turn becomes facts at once (it was never sent, so no cache hit is lost), unless a call of it
   * failed: the model then sees exactly what it sent, to fix it.
   */
  private appendTurn(turn: ChatMessage[], facts: string, failed: boolean): void {
    const tools = this.o.requestTools();
    const prefixTokens = this.o.estimate(this.stablePart(), tools);
    const budget = this.o.budget();
    const laterCalls = Math.min(budget.maxSteps - this.state.steps, Math.max(1, this.state.steps));
    const prices = foldPrices(this.o.inputPrice);
    let foldOld = false;
    if (this.state.history.length > 0) {
      foldOld = foldPays(
        {
          verbatimTokens: this.o.estimate(this.state.history, undefined),
          factsTokens: this.o.estimate([factsMessage([this.historyFactsText()])], undefined),
          prefixTokens,
          sentBefore: true,
          laterCalls,
        },
        prices,
      );
    }
    // Folded, the old turns stop being the tail: the new one cannot stay verbatim after them and be cached.
    const foldNew =
      !failed &&
      (foldOld || this.state.history.length === 0) &&
      foldPays(
        {
          verbatimTokens: this.o.estimate(turn, undefined),
          factsTokens: this.o.estimate([factsMessage([facts])], undefined),
          prefixTokens,
          sentBefore: false,
          laterCalls,
        },
        prices,
      );
    if (foldOld) this.foldHistoryIntoFacts(foldNew ? facts : undefined);
    if (!foldNew) {
      this.state.history.push(...turn);
      this.noteHistoryFact(facts);
    } else if (!foldOld) {
      this.foldHistoryIntoFacts(facts);
    }
  }
}

function sameBlocks(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The prices the auto memory weighs a fold with; a model without a cached price has no discount to lose. */
function foldPrices(price: ModelPrice): { inputPerMillion: number; cachedInputPerMillion: number } {
  return {
    inputPerMillion: price.inputPerMillion,
    cachedInputPerMillion: price.cachedInputPerMillion ?? price.inputPerMillion,
  };
}
