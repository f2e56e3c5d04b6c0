// The agent kernel: one task, run to its end by a bounded think → act → observe loop, checked before every
// model call (stop conditions, memory fold, budget plan), never after, so nothing overshoots. The prompt is
// run-memory.ts's, each step's trace step-accounting.ts's, checkpoint writes checkpoint-queue.ts's. It knows
// nothing of queues or databases: the worker adapts it to BullMQ, the store to MySQL. Design: docs/runs.md.
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { ModelApiError, toRunError, type RunError } from './errors.js';
import { addUsage, planCall, usageOf, type Budget, type TokenUsage } from './budget.js';
import * as D from './defaults.js';
import { parseJsonReply } from './json-action-parser.js';
import type { CallGate } from './call-gate.js';
import { CheckpointQueue } from './checkpoint-queue.js';
import { deadlineSignal, type DeadlineSignal } from './deadline-signal.js';
import type { AssistantMessage, ChatMessage, ResponseFormat, ToolSpec } from './messages.js';
import { callModel, type ModelCallRequest, type ModelCallResult } from './model-call.js';
import { measurePrompt, PromptCalibration } from './prompt-calibration.js';
import type { AgentProtocol, PlannedCall, ProtocolName } from './protocol.js';
import { jsonProtocol } from './protocol-json.js';
import { migrateLegacyState } from './legacy-state.js';
import { toolsProtocol } from './protocol-tools.js';
import { observeRepeat, REPEAT_NUDGE, turnSignature } from './repeat-detector.js';
import { RunMemory } from './run-memory.js';
import type { ModelCallStart, RunObserver } from './run-observer.js';
import { sleep as defaultSleep } from './sleep.js';
import { StepAccounting, type StepCall } from './step-accounting.js';
import { invalidOutputObservation, StructuredOutput } from './structured-output.js';
import {
  deadlineAt,
  deadlineReserveMs,
  decideTurn,
  finalTurnWhy,
  type FinalReason,
} from './stop-conditions.js';
import { truncateChars, truncateToTokens } from './truncate.js';
import { recallTurn, type RunRecall } from './recalled-notes.js';
import { addSideSpend } from './side-spend.js';
import { RunSidePurse } from './side-purse.js';
import type {
  AgentResult,
  Checkpoint,
  PendingTurn,
  SideSpend,
  RunState,
  RunStatus,
  StepTrace,
  StopReason,
  ToolCallRecord,
  TraceKind,
  UncertainEffect,
} from './types.js';
import type { ChatModel, ChatRequest, ReasoningEffort, ServiceTier } from './chat-model.js';
import { costUsd, defaultReasoningEffort, type ModelPrice } from './pricing.js';
import {
  addTreeUsage,
  applyChildResults,
  treeUsageOf,
  awaitingChildrenOf,
  childrenFor,
  MIN_CHILD_COST_USD,
  MIN_CHILD_TOKENS,
  type ChildBudget,
  type ChildRequest,
  type RunChildren,
} from './child-calls.js';
import {
  countResponseFormatTokens,
  estimateMessageTokensByLine,
  countRememberedText,
  tokenCounterFor,
  type TokenCounter,
} from './tokens.js';
import type { ToolRegistry } from './tool-registry.js';
import { runToolCall } from './run-tool-call.js';
import type { ApprovalRequest, RunApprovals } from './approval.js';
import {
  applyDecisions,
  approvalEvents,
  approvalsFor,
  awaitingOf,
  callKeyOf,
  decidedCall,
} from './turn-approvals.js';

export interface AgentRunOptions {
  /**
   * `auto` (the default): the whole transcript, as the model wrote it (memory.ts, docs/memory.md), cut down only
   * near the context limit or the budget (old results cleared in place, then old turns summarised). A number: the
   * sliding window of that many recent messages, older ones folded into a rolling summary (AGENT_MEMORY_WINDOW set
   * to a number).
   */
  memoryWindow?: number | 'auto';
  /** The model's context window, in tokens: the auto memory clears old results before a prompt reaches 80 % of it. */
  contextTokens?: number;
  /** The provider's prompt cache key; default, one per agent (a hash of its system prompt and tools). */
  cacheKey?: string;
  /** Default 0.2. */
  temperature?: number;
  /**
   * The completion limit of a normal step (LLM_MAX_TOKENS). Default 512; 4,096 for a reasoning model that reasons
   * (an effort other than `none`), whose reasoning comes out of the same limit.
   */
  completionTokens?: number;
  /** Tool results are cut to this many tokens before entering memory. Default 400. */
  toolResultMaxTokens?: number;
  /** Per tool call, when the tool sets none. Default 15 s. */
  toolTimeoutMs?: number;
  /** Retries of a transient tool failure inside the call. Default 2. */
  toolTransientRetries?: number;
  toolRetryBaseDelayMs?: number;
  /** Rounds of running again, without the model, the calls of a turn that failed for infrastructure reasons. Default 4. */
  infraRetries?: number;
  /** First wait before such a round; doubled each round. Default 1 s. */
  infraRetryBaseDelayMs?: number;
  /** Per model attempt. Default 60 s (always capped by the deadline). */
  modelTimeoutMs?: number;
  /** Retries of a retryable model API error inside a step. Default 3. */
  modelRetries?: number;
  modelRetryBaseDelayMs?: number;
  /** Replaces the protocol's system prompt. */
  systemPrompt?: string;
  /**
   * Shape requests for a reasoning model (`max_completion_tokens`, no temperature); default: what the model's price
   * entry says (`reasoning: true`).
   */
  reasoningModel?: boolean;
  /**
   * `reasoning_effort` of a reasoning model's requests. Absent: `none` where the model's price entry lists it (a
   * step then costs what a non-reasoning model's does, and OpenAI's Chat Completions takes function tools with
   * gpt-5.4 and later only at `none`), else nothing is sent and the provider's default applies.
   */
  reasoningEffort?: ReasoningEffort;
  /** `flex`: calls go at the provider's flex tier, and fall back to the default tier near the deadline. */
  serviceTier?: ServiceTier;
}

/** Only what the kernel logs: failures of observers it swallows. pino's logger fits. */
export interface KernelLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface AgentRunInput {
  runId: string;
  task: string;
  model: ChatModel;
  price: ModelPrice;
  tools: ToolRegistry;
  budget: Budget;
  /** The agent's instructions: put before the protocol's system prompt (which lists the tools and the format). */
  instructions?: string;
  /** Default 'tools'. A checkpoint keeps the protocol it was started with. */
  protocol?: ProtocolName;
  /**
   * The schema the run's final answer must satisfy (an agent's structured output). The model is shown its JSON
   * Schema, a reply that fails it comes back as an observation, and the result carries `output`. Pass the same
   * schema again when resuming.
   */
  output?: z.ZodType;
  options?: AgentRunOptions;
  /** Continue a run from the state a checkpoint callback was handed (`Checkpoint.state`, or its JSON parsed). */
  checkpoint?: RunState;
  /**
   * Notes of earlier runs, for a new run: a `recall_notes` call and its result open the transcript (tool output,
   * never a system or user message; recalled-notes.ts). Ignored on a resume, whose transcript has them already.
   */
  recall?: RunRecall;
  /**
   * What a new run paid before it started, outside its turns (the embedding of its opening recall's query): the
   * run counts it from the start, in its budget and its result's usage. Ignored on a resume (its state has it).
   */
  embeddings?: SideSpend;
  /**
   * When a new run began, if before the kernel (ms since epoch; the worker's opening recall): its deadline counts
   * from then, so time spent before it started is the run's too. Default: now. Ignored on a resume.
   */
  startedAt?: number;
  /** Aborting it cancels the run: stopReason `cancelled`, unfinished tool calls left to a resume. */
  signal?: AbortSignal;
  /** After every step. Awaited; a throw is logged and ignored. */
  onStep?: (trace: StepTrace) => void | Promise<void>;
  /**
   * Whenever the state changes in a way a resume must not repeat (a model call, a tool call). One at a time, in
   * order; a checkpoint taken while another is written replaces any still waiting (a resume needs the latest).
   * The run waits for the write-ahead one of a turn with side effects (the model's decision, before any tool
   * acts on it) and, at its end, for all of them; a throw is logged and ignored.
   */
  onCheckpoint?: (checkpoint: Checkpoint) => void | Promise<void>;
  /**
   * Awaited (with the write-ahead checkpoint) before tools that may have side effects run; a rejection ends the
   * run with its error. The worker uses it to be sure the run is recorded before anything irreversible happens.
   */
  beforeSideEffects?: () => Promise<void>;
  /** Limits shared with the rest of the fleet (batch and daily budgets, rate limits). */
  gate?: CallGate;
  /**
   * Which calls wait for a person (the task's policy; tools may ask on their own) and the decisions reached
   * since the run parked. A turn with a call that waits runs its other calls, then the run returns with
   * stopReason `awaiting_approval` and its state open; resume it from its checkpoint with the decisions.
   */
  approvals?: RunApprovals;
  /**
   * Child agents (tools with `childAgent`): whether this run may start any, how many a turn, and the outcomes of
   * those of the turn it was parked on. A turn that starts children runs its other calls, then the run returns
   * with stopReason `awaiting_children` and its state open; resume it with their outcomes.
   */
  children?: RunChildren;
  /** Told of every model and tool call as it starts and ends (the worker's tracing); see run-observer.ts. */
  observer?: RunObserver;
  logger?: KernelLogger;
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const PROTOCOLS: Record<ProtocolName, AgentProtocol> = { tools: toolsProtocol, json: jsonProtocol };

export function runAgent(input: AgentRunInput): Promise<AgentResult> {
  return new AgentRun(input).run();
}

class AgentRun {
  private readonly state: RunState;
  private readonly protocol: AgentProtocol;
  private readonly count: TokenCounter;
  private readonly countRemembered: TokenCounter = (text) => countRememberedText(text, this.count);
  private readonly calibration: PromptCalibration;
  private readonly opts: Required<
    Omit<AgentRunOptions, 'systemPrompt' | 'reasoningModel' | 'reasoningEffort' | 'serviceTier' | 'cacheKey'>
  >;
  /** Set for a reasoning model: its requests carry no temperature and the effort asked for. */
  private readonly reasoning: ChatRequest['reasoning'];
  /** Sent with every call, so the provider's cache groups the runs of one agent. */
  private readonly cacheKey: string;
  private readonly signal: AbortSignal;
  /** The tools' signal: the run's, cut at the soft deadline; made at the first tool call. */
  private toolDeadline: DeadlineSignal | null = null;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly pinned: ChatMessage[];
  private readonly structured: StructuredOutput | null;
  /** Why a budget stopped the run, in numbers (the result's stopDetail); set by the call that did not fit. */
  private stopDetail: string | null = null;
  /** The run's validated output, once the model has given one. */
  private validOutput: { value: unknown } | null = null;
  /** What the prompt shows and when it is folded (run-memory.ts). */
  private readonly memory: RunMemory;
  /** What each step's trace reports (step-accounting.ts). */
  private readonly trace = new StepAccounting();
  private readonly checkpoints: CheckpointQueue | null;
  /** Settlements of the fleet gate still in flight: not awaited between steps, but before the run ends. */
  private readonly settles = new Set<Promise<void>>();
  /** The tools' purse for calls outside the run's turns (embeddings: side-purse.ts). */
  private readonly purse = new RunSidePurse({
    left: () => {
      const reserve = this.finalTurnReserve();
      const used = usageOf(this.state.usage, this.price);
      const budget = this.budget;
      return {
        tokens: budget.maxTokens - used.totalTokens - reserve.promptTokens - reserve.completionTokens,
        costUsd: budget.maxCostUsd - used.costUsd - costUsd(this.price, reserve),
      };
    },
    gate: () => this.input.gate,
    timeLeftMs: () => Math.max(0, this.softDeadline() - this.now()),
    spend: (cost) => {
      this.state.embeddings = addSideSpend(this.state.embeddings, cost);
    },
    deferSettle: (settle) => this.deferSettle(settle),
    warn: (err, message) => this.input.logger?.warn({ err, runId: this.state.runId }, message),
  });

  constructor(private readonly input: AgentRunInput) {
    this.now = input.now ?? Date.now;
    this.sleep = input.sleep ?? defaultSleep;
    this.signal = input.signal ?? new AbortController().signal;
    this.count = tokenCounterFor(input.model.model);
    const o = input.options ?? {};
    const reasoningModel = o.reasoningModel ?? input.price.reasoning ?? false;
    const effort = reasoningModel ? (o.reasoningEffort ?? defaultReasoningEffort(input.price)) : undefined;
    this.reasoning = reasoningModel ? (effort ? { effort } : {}) : undefined;
    this.opts = {
      memoryWindow: o.memoryWindow ?? D.DEFAULT_MEMORY_WINDOW,
      contextTokens: o.contextTokens ?? D.DEFAULT_CONTEXT_TOKENS,
      temperature: o.temperature ?? D.DEFAULT_TEMPERATURE,
      completionTokens:
        o.completionTokens ??
        (reasoningModel && effort !== 'none'
          ? D.DEFAULT_REASONING_COMPLETION_TOKENS
          : D.DEFAULT_COMPLETION_TOKENS),
      toolResultMaxTokens: o.toolResultMaxTokens ?? D.DEFAULT_TOOL_RESULT_MAX_TOKENS,
      toolTimeoutMs: o.toolTimeoutMs ?? D.DEFAULT_TOOL_TIMEOUT_MS,
      toolTransientRetries: o.toolTransientRetries ?? D.DEFAULT_TOOL_TRANSIENT_RETRIES,
      toolRetryBaseDelayMs: o.toolRetryBaseDelayMs ?? D.DEFAULT_TOOL_RETRY_BASE_DELAY_MS,
      infraRetries: o.infraRetries ?? D.DEFAULT_INFRA_RETRIES,
      infraRetryBaseDelayMs: o.infraRetryBaseDelayMs ?? D.DEFAULT_INFRA_RETRY_BASE_DELAY_MS,
      modelTimeoutMs: o.modelTimeoutMs ?? D.DEFAULT_MODEL_TIMEOUT_MS,
      modelRetries: o.modelRetries ?? D.DEFAULT_MODEL_RETRIES,
      modelRetryBaseDelayMs: o.modelRetryBaseDelayMs ?? D.DEFAULT_MODEL_RETRY_BASE_DELAY_MS,
    };
    this.state = input.checkpoint ? structuredClone(input.checkpoint) : this.initialState();
    this.protocol = PROTOCOLS[this.state.protocol];
    if (!input.checkpoint && input.recall && input.recall.notes.length > 0) this.openWithRecall(input.recall);
    if (!input.checkpoint && input.embeddings && input.embeddings.calls > 0)
      this.state.embeddings = { ...input.embeddings };
    if (input.checkpoint) migrateLegacyState(this.state, input.tools.names);
    this.calibration = new PromptCalibration(this.state.promptCalibration);
    if (this.state.suspendedAt !== undefined) {
      // The wait for the job's retry after an outage is not the run's time.
      this.excludeFromDeadline(Math.max(0, this.now() - this.state.suspendedAt));
      delete this.state.suspendedAt;
    }
    const onCheckpoint = input.onCheckpoint;
    this.checkpoints = onCheckpoint
      ? new CheckpointQueue((checkpoint) => this.notify('checkpoint', () => onCheckpoint(checkpoint)))
      : null;
    this.structured = input.output ? new StructuredOutput(input.output) : null;
    const protocolPrompt = this.protocol.systemPrompt(input.tools);
    let system =
      o.systemPrompt ?? (input.instructions ? `${input.instructions}\n\n${protocolPrompt}` : protocolPrompt);
    if (this.structured) {
      system += `\n\n${this.protocol.outputInstructions(JSON.stringify(this.structured.jsonSchema))}`;
    }
    this.pinned = [
      { role: 'system', content: system },
      { role: 'user', content: this.state.task },
    ];
    this.memory = new RunMemory({
      state: this.state,
      pinned: this.pinned,
      window: this.opts.memoryWindow,
      contextTokens: this.opts.contextTokens,
      completionTokens: this.opts.completionTokens,
      requestTools: () => this.protocol.requestTools(input.tools),
      estimate: (messages, tools) => this.estimatePrompt(messages, tools),
      count: this.count,
      price: () => this.price,
      budget: () => this.budget,
    });
    // The task is not part of it: jobs of one agent share the system prompt and the tools, the cached prefix.
    this.cacheKey =
      o.cacheKey ??
      `agent-${createHash('sha256')
        .update(system)
        .update(JSON.stringify(this.protocol.requestTools(input.tools) ?? []))
        .digest('hex')
        .slice(0, 24)}`;
  }

  /** The recalled notes open the transcript; the first step's trace says which. */
  private openWithRecall(recall: RunRecall): void {
    this.state.history.push(...recallTurn(this.protocol, recall));
    this.state.recalled = recall.notes.map((n) => n.id);
    this.trace.noteEvent({
      type: 'recall',
      query: recall.query,
      notes: recall.notes.map((n) => ({ id: n.id, text: truncateChars(n.text, 500) })),
    });
  }

  private initialState(): RunState {
    return {
      version: 1,
      runId: this.input.runId,
      task: this.input.task,
      protocol: this.input.protocol ?? 'tools',
      budget: this.input.budget,
      price: this.input.price,
      startedAt: Math.min(this.input.startedAt ?? Infinity, this.now()),
      history: [],
      summary: null,
      usage: { promptTokens: 0, completionTokens: 0 },
      steps: 0,
      toolCalls: 0,
      modelCalls: 0,
      pending: null,
      repeat: { signature: null, count: 0 },
      result: null,
    };
  }

  /**
   * The run's own budget: what it was given, less what its children spent (they were carved from it), so the
   * tree never passes it.
   */
  private get budget(): Budget {
    const spent = this.state.childUsage;
    const side = this.state.embeddings;
    const held = this.purse.held;
    if (!spent && !side && held.calls === 0) return this.state.budget;
    const given = this.state.budget;
    const tokens = (spent?.totalTokens ?? 0) + (side?.tokens ?? 0) + held.tokens;
    const dollars = (spent?.costUsd ?? 0) + (side?.costUsd ?? 0) + held.costUsd;
    return {
      ...given,
      maxTokens: Math.max(0, given.maxTokens - tokens),
      maxCostUsd: Math.max(0, given.maxCostUsd - dollars),
    };
  }

  /** The prices the run started at: a resume after the table changed bills the whole run at them, as it began. */
  private get price(): ModelPrice {
    return this.state.price ?? this.input.price;
  }

  async run(): Promise<AgentResult> {
    try {
      return await this.loop();
    } catch (error) {
      // A bug, not a model or tool failure (those are observations): end the run, keep what was spent.
      return this.finish('failed', 'error', null, toRunError(error));
    } finally {
      this.toolDeadline?.dispose();
      await this.checkpoints?.written();
      while (this.settles.size > 0) await Promise.all(this.settles);
    }
  }

  private async loop(): Promise<AgentResult> {
    if (this.state.result) return this.state.result;
    if (this.state.pending) {
      // Decisions and children's outcomes apply to the turn the run was parked on, never to one planned now.
      applyDecisions(this.state.pending, this.input.approvals, this.state.runId, this.state.steps);
      this.takeChildOutcomes(this.state.pending);
      const ended = await this.completeTurn(this.state.pending);
      if (ended) return ended;
    }
    for (;;) {
      const decision = decideTurn(
        this.budget,
        this.state.steps,
        { now: this.now(), startedAt: this.state.startedAt },
        this.signal,
      );
      if (decision.kind === 'stop')
        return this.finish(statusOf(decision.reason), decision.reason, null, null);
      await this.foldMemory();
      if (decision.kind === 'final') return this.finalTurn(decision.reason);

      const messages = this.prompt();
      const tools = this.protocol.requestTools(this.input.tools);
      const call = await this.callModel({
        messages,
        tools,
        // A correction turn asks for the schema's shape, as the final turn does.
        responseFormat: this.state.outputIssues === undefined ? undefined : this.responseFormat(),
        desiredMaxTokens: this.opts.completionTokens,
        minCompletionTokens: D.MIN_STEP_COMPLETION_TOKENS,
        reserveAfter: this.finalTurnReserve(),
        answerBy: this.softDeadline(),
      });
      if (!call.ok) {
        if (call.stop === 'error') return this.finish('failed', 'error', null, call.error.toRunError(), call);
        if (call.stop === 'cancelled') return this.finish('stopped', 'cancelled', null, null, call);
        // The budget or the clock cannot cover a normal step: one last turn without tools, if it fits.
        this.trace.carryOver(call);
        if (call.message) this.stopDetail = call.message;
        return this.finalTurn(call.stop);
      }

      const step = ++this.state.steps;
      const reply = call.completion.message;
      let turn = this.protocol.parse(reply, step);
      if (turn.kind === 'invalid' && this.structured && this.protocol.name === 'json') {
        // The output object itself, without the {"answer": …} around it, is what was asked for.
        const bare = this.structured.check(reply.content ?? '');
        if (bare.ok) turn = { kind: 'answer', text: JSON.stringify(bare.value) };
      }
      if (turn.kind === 'answer' && this.structured) {
        const checked = this.structured.check(turn.text);
        if (checked.ok) {
          const answer = this.acceptOutput(checked.value);
          await this.emitStep(step, 'answer', [], [answer], call, null);
          return this.finish('succeeded', 'answer', answer, null);
        }
        // Like malformed JSON: the model sees the issues, field by field, and tries again within the budget.
        this.state.outputIssues = checked.issues;
        turn = { kind: 'invalid', observation: invalidOutputObservation(checked.issues) };
      }
      if (turn.kind === 'answer') {
        await this.emitStep(step, 'answer', [], [turn.text], call, null);
        return this.finish('succeeded', 'answer', turn.text, null);
      }
      if (turn.kind === 'invalid') {
        // Bad JSON, an empty reply: the model is told what was wrong and tries again next step.
        this.memory.recordInvalidTurn(asMemory(reply), turn.observation);
        this.checkpoint();
        await this.emitStep(step, 'invalid', [], [turn.observation], call, turn.observation);
        continue;
      }
      const carried = this.trace.takeCarry();
      const pending: PendingTurn = {
        assistant: this.protocol.name === 'json' ? asMemory(reply) : asCallingTurn(reply),
        calls: turn.calls,
        results: turn.calls.map(() => null),
        trace: {
          usage: addUsage(call.usage, carried.usage),
          modelLatencyMs: call.latencyMs + carried.latencyMs,
          attempts: call.attempts + carried.modelCalls,
          startedAt: this.now(),
        },
      };
      const approvals = await approvalsFor(turn.calls, {
        policy: this.input.approvals?.policy ?? 'none',
        tools: this.input.tools,
        runId: this.state.runId,
        step,
        now: this.now(),
        defaultTimeoutMs: this.opts.toolTimeoutMs,
        onRuleFailed: (tool, err) =>
          this.input.logger?.warn(
            { err, runId: this.state.runId, tool },
            "the tool's needsApproval rule failed: the call waits for a decision",
          ),
      });
      if (approvals) pending.approvals = approvals;
      const children = childrenFor(pending, {
        tools: this.input.tools,
        children: this.input.children,
        carve: (n) => this.carveChildBudget(n),
      });
      if (children) pending.children = children;
      this.state.toolCalls += turn.calls.length;
      this.state.pending = pending;
      // Write-ahead: a decision with side effects is saved before any tool acts on it, so a resumed run carries
      // out the same calls (with the same call keys) instead of asking the model for new ones. A turn of
      // read-only calls does not wait for it: a crash mid-turn costs one model call asked again, while waiting
      // would cost a checkpoint and a round trip to the store on every step.
      if (this.hasSideEffects(pending)) {
        this.checkpoint();
        await Promise.all([this.checkpoints?.written(), this.input.beforeSideEffects?.()]);
      } else {
        // Saved, not waited for, only once its tools outlast this turn of the event loop: a crash while they run
        // then keeps what the call cost; tools that answer at once are saved by the step's own checkpoint.
        setImmediate(() => {
          if (this.state.pending === pending && !this.signal.aborted) this.checkpoint();
        });
      }
      const ended = await this.completeTurn(pending);
      if (ended) return ended;
    }
  }

  /**
   * Whether some call of the turn may change something (one that runs a tool not marked read-only) or waits for
   * a decision: either way the turn is saved before any tool runs.
   */
  private hasSideEffects(pending: PendingTurn): boolean {
    if (pending.approvals || pending.children) return true;
    return pending.calls.some((call) => {
      const tool = this.input.tools.get(call.name);
      // An unknown tool or arguments that do not parse run nothing.
      return tool !== undefined && call.args.ok && tool.readOnly !== true;
    });
  }

  /**
   * Runs the turn's unfinished calls concurrently and records their results, except those that failed for
   * infrastructure reasons: they stay unfinished and are returned.
   */
  private async runCalls(
    pending: PendingTurn,
    step: number,
    sideEffects: boolean,
  ): Promise<{ tool: string; errorCode: string }[]> {
    // One for the run (remade only after a wait the deadline does not count): the soft deadline does not move,
    // and a signal costs a few µs to make.
    this.toolDeadline ??= deadlineSignal(this.signal, this.softDeadline() - this.now());
    const toolSignal = this.toolDeadline.signal;
    const unavailable: { tool: string; errorCode: string }[] = [];
    await Promise.all(
      pending.calls.map(async (planned, i) => {
        if (pending.results[i]) return;
        const decided = decidedCall(planned, pending.approvals?.[i]);
        if (decided === null) return; // waits for a decision
        if ('record' in decided) {
          // Rejected or expired: nothing runs; the model reads who said no and why.
          pending.results[i] = decided.record;
          return;
        }
        // A child agent's task runs as a job of its own: its outcome comes back with the resume. An approver's
        // edit is what it starts with, once its schema accepts it.
        const call = decided.run;
        const child = pending.children?.[i];
        if (child) {
          if (call === planned || !call.args.ok) return;
          const tool = this.input.tools.get(call.name);
          const edited = tool?.parameters.safeParse(call.args.value ?? {});
          if (edited?.success) child.input = call.args.value ?? {};
          else pending.results[i] = invalidEdit(call, edited?.error.message ?? 'unknown tool');
          return;
        }
        const watch = this.input.observer?.toolCall({
          name: call.name,
          callId: call.id,
          step,
          args: call.args.ok ? call.args.value : undefined,
        });
        const outcome = await runToolCall(
          this.input.tools,
          call,
          {
            signal: toolSignal,
            runId: this.state.runId,
            callKey: callKeyOf(this.state.runId, step, i),
            step,
            purse: this.purse,
          },
          {
            defaultTimeoutMs: this.opts.toolTimeoutMs,
            transientRetries: this.opts.toolTransientRetries,
            retryBaseDelayMs: this.opts.toolRetryBaseDelayMs,
          },
          this.now,
        );
        watch?.ended(outcome);
        // A call cut short by cancellation is left unfinished, so the resumed run makes it again.
        if (this.signal.aborted && outcome.errorCode === 'aborted') return;
        if (outcome.infrastructure) {
          unavailable.push({ tool: call.name, errorCode: outcome.errorCode ?? 'unavailable' });
          return;
        }
        const output =
          toolSignal.aborted && outcome.errorCode === 'aborted'
            ? `${call.name} was stopped: time is nearly up.`
            : outcome.output;
        pending.results[i] = {
          id: call.id,
          tool: call.name,
          args: call.args.ok ? call.args.value : null,
          ok: outcome.ok,
          // Remembered whole: the tools protocol sends it as is, and every prompt's bound counts it again.
          output: truncateToTokens(output, this.opts.toolResultMaxTokens, this.count, this.countRemembered),
          errorCode: outcome.errorCode ?? null,
          latencyMs: outcome.latencyMs,
          ...(outcome.uncertain ? { uncertain: outcome.uncertain } : {}),
        };
        if (outcome.uncertain) this.noteUncertain(outcome.uncertain);
        // The last call to finish is saved by the checkpoint that ends the step, taken right after; a finished
        // read-only call is cheaper to make again than to save.
        if (sideEffects && pending.results.includes(null)) this.checkpoint();
      }),
    );
    return unavailable;
  }

  /** Runs the turn's unfinished tool calls, records the observations, and ends the step. */
  private async completeTurn(pending: PendingTurn): Promise<AgentResult | null> {
    const step = this.state.steps;
    const sideEffects = this.hasSideEffects(pending);
    // A call that failed because what it depends on is down is not the model's doing: it is not shown to the
    // model (which would only try again, a model call each time, and trip the repeat detector) but run again
    // here after a wait; if the outage outlasts the waits, the run ends retryable with those calls unfinished,
    // so the job's next attempt runs them again instead of replaying a failure.
    for (let round = 0; ; round++) {
      const unavailable = await this.runCalls(pending, step, sideEffects);
      if (this.signal.aborted) return this.finish('stopped', 'cancelled', null, null);
      if (unavailable.length === 0) break;
      const delayMs = this.opts.infraRetryBaseDelayMs * 2 ** round;
      const tools = unavailable.map((u) => `${u.tool}: ${u.errorCode}`).join('; ');
      if (round >= this.opts.infraRetries || this.toolDeadline?.signal.aborted) {
        return this.finish('failed', 'error', null, toolsUnavailable(tools, round + 1));
      }
      this.input.logger?.warn(
        { runId: this.state.runId, step, unavailable: tools, retryInMs: delayMs },
        'tool dependencies unavailable: running the calls again after a wait',
      );
      const waitedFrom = this.now();
      try {
        await this.sleep(delayMs, this.signal);
      } catch {
        return this.finish('stopped', 'cancelled', null, null);
      }
      this.excludeFromDeadline(this.now() - waitedFrom);
    }

    const awaiting = awaitingOf(pending, this.state.runId, step);
    if (awaiting.length > 0) return this.park(awaiting);
    const children = awaitingChildrenOf(pending, this.state.runId, step);
    if (children.length > 0) return this.waitForChildren(children);
    for (const event of approvalEvents(pending)) this.trace.noteEvent(event);

    const results = pending.results as ToolCallRecord[];
    const outputs = results.map((r) => r.output);
    const repeat = observeRepeat(this.state.repeat, turnSignature(pending.calls, outputs));
    this.state.repeat = repeat.state;
    if (repeat.verdict === 'nudge' && outputs.length > 0) outputs[outputs.length - 1] += REPEAT_NUDGE;

    this.memory.recordTurn([pending.assistant, ...this.protocol.observationMessages(pending.calls, outputs)]);
    this.state.pending = null;
    this.checkpoint();
    const failed = results.filter((r) => !r.ok).map((r) => `${r.tool}: ${r.errorCode}`);
    await this.emitStep(
      step,
      'action',
      results.map((r) => ({
        id: r.id,
        tool: r.tool,
        args: r.args,
        ok: r.ok,
        errorCode: r.errorCode,
        latencyMs: r.latencyMs,
      })),
      outputs,
      {
        usage: pending.trace.usage,
        attempts: pending.trace.attempts,
        latencyMs: pending.trace.modelLatencyMs + (this.now() - pending.trace.startedAt),
        modelLatencyMs: pending.trace.modelLatencyMs,
      },
      failed.length ? failed.join('; ') : null,
    );
    if (repeat.verdict === 'end') {
      return this.finish('failed', 'error', null, {
        kind: 'model_behavior',
        code: 'repeated_action',
        message: 'The model repeated the same action with the same result three times in a row.',
        retryable: false,
      });
    }
    return null;
  }

  /**
   * Some calls of the turn wait for a person: the run stops here with its state open (the turn's other calls
   * have run), and the time until it resumes is not charged to its deadline.
   */
  private park(awaiting: ApprovalRequest[]): AgentResult {
    const result = this.finish('stopped', 'awaiting_approval', null, null);
    result.awaitingApproval = awaiting;
    return result;
  }

  /**
   * The turn started child agents: the run stops here with its state open until every one has an outcome. Their
   * time is the run's (their deadlines were carved from its own).
   */
  private waitForChildren(children: ChildRequest[]): AgentResult {
    const result = this.finish('stopped', 'awaiting_children', null, null);
    result.awaitingChildren = children;
    return result;
  }

  /** Children's outcomes given for the parked turn: their calls' results, their spend the run's from now on. */
  private takeChildOutcomes(pending: PendingTurn): void {
    const taken = applyChildResults(
      pending,
      this.input.children,
      this.state.runId,
      this.state.steps,
      (text) => truncateToTokens(text, this.opts.toolResultMaxTokens, this.count, this.countRemembered),
    );
    for (const outcome of taken) {
      const { jobId, agent, status, stopReason, usage } = outcome;
      this.state.children = [...(this.state.children ?? []), { jobId, agent, status, stopReason, usage }];
      this.state.childUsage = this.state.childUsage ? addTreeUsage(this.state.childUsage, usage) : usage;
    }
  }

  /**
   * What each of `n` children of a turn may spend: what the run has left after the final turn's reserve, shared
   * equally, and the time left before its soft deadline; null when that cannot pay for one useful child.
   */
  private carveChildBudget(n: number): ChildBudget | null {
    const reserve = this.finalTurnReserve();
    const used = usageOf(this.state.usage, this.price);
    const tokens = Math.floor(
      (this.budget.maxTokens - used.totalTokens - reserve.promptTokens - reserve.completionTokens) / n,
    );
    const dollars = (this.budget.maxCostUsd - used.costUsd - costUsd(this.price, reserve)) / n;
    const ms = Math.floor(this.softDeadline() - this.now() - deadlineReserveMs(this.budget));
    if (tokens < MIN_CHILD_TOKENS || dollars < MIN_CHILD_COST_USD || ms < 1_000) return null;
    // Rounded down to a micro-dollar: a child's limit never rounds above its share.
    return { maxTokens: tokens, maxCostUsd: Math.floor(dollars * 1e6) / 1e6, deadlineMs: ms };
  }

  /** The last turn: no tools, an instruction to answer now, whatever budget is left. */
  private async finalTurn(reason: FinalReason): Promise<AgentResult> {
    if (this.state.steps >= this.budget.maxSteps) return this.finish('stopped', reason, null, null);
    const why = finalTurnWhy(reason);
    this.trace.noteEvent({ type: 'final_turn', reason, why });
    const instruction: ChatMessage = {
      role: 'user',
      content: this.structured
        ? this.protocol.finalOutputInstruction(why)
        : this.protocol.finalTurnInstruction(why),
    };
    const ask = (messages: ChatMessage[]) =>
      this.callModel(
        {
          messages,
          tools: undefined,
          responseFormat: this.responseFormat(),
          desiredMaxTokens: this.opts.completionTokens,
          minCompletionTokens: D.MIN_FINAL_COMPLETION_TOKENS,
          answerBy: deadlineAt(this.budget, this.state.startedAt),
        },
        'final',
      );
    // Cheaper prompts when the whole conversation no longer fits: all but the latest turn folded into the
    // summary, then everything folded.
    const prompts = [
      this.prompt(),
      this.memory.compactPrompt(true)?.messages,
      this.memory.compactPrompt(false)?.messages,
    ];
    let call!: ModelCallResult;
    for (const prompt of prompts) {
      if (!prompt) continue;
      call = await ask([...prompt, instruction]);
      const unaffordable = !call.ok && (call.stop === 'token_budget' || call.stop === 'cost_budget');
      if (!unaffordable || call.attempts > 0) break;
    }
    if (!call.ok) {
      if (call.stop === 'cancelled') return this.finish('stopped', 'cancelled', null, null, call);
      const error = call.stop === 'error' ? call.error.toRunError() : null;
      if (call.stop !== 'error' && call.message) {
        this.stopDetail = this.stopDetail
          ? `${this.stopDetail}; a final answer did not fit either (${call.message})`
          : call.message;
      }
      const unaffordable = call.stop === 'token_budget' || call.stop === 'cost_budget';
      const fallback = unaffordable && !this.structured ? this.memory.deterministicAnswer(reason) : null;
      return this.finish('stopped', reason, fallback, error, call);
    }
    const step = ++this.state.steps;
    if (this.structured) return this.finalOutput(this.structured, step, reason, call);
    let answer = this.protocol.parseFinalAnswer(call.completion.message);
    // A tool call written as text is not an answer, whatever protocol: no tool runs now, so what the run did
    // stands in for it.
    if (answer !== null && isToolCallText(answer)) answer = this.memory.deterministicAnswer(reason);
    await this.emitStep(
      step,
      'final',
      [],
      answer ? [answer] : [],
      call,
      answer ? null : 'empty final answer',
    );
    return this.finish('stopped', reason, answer, null);
  }

  /** The last turn's reply of a run with an output schema: the value when it is valid, its issues when not. */
  private async finalOutput(
    structured: StructuredOutput,
    step: number,
    reason: FinalReason,
    call: ModelCallResult & { ok: true },
  ): Promise<AgentResult> {
    const text = this.protocol.finalOutputText(call.completion.message);
    const checked = text ? structured.check(text) : { ok: false as const, issues: '(output): empty reply' };
    if (checked.ok) {
      const answer = this.acceptOutput(checked.value);
      await this.emitStep(step, 'final', [], [answer], call, null);
      return this.finish('stopped', reason, answer, null);
    }
    // No step is left to correct it: the run ends without an output, keeping the text the model gave.
    this.state.outputIssues = checked.issues;
    await this.emitStep(step, 'final', [], text ? [text] : [], call, `invalid output: ${checked.issues}`);
    return this.finish('stopped', reason, text, null);
  }

  /** Keeps a validated output; the answer is its JSON text. */
  private acceptOutput(value: unknown): string {
    this.validOutput = { value };
    delete this.state.outputIssues;
    return JSON.stringify(value);
  }

  /** The `response_format` asking for the output schema: tools protocol only, until the endpoint refuses it. */
  private responseFormat(): ResponseFormat | undefined {
    if (!this.structured || this.protocol.name !== 'tools' || this.state.responseFormatRefused)
      return undefined;
    return this.structured.responseFormat ?? undefined;
  }

  /**
   * What a step must leave affordable so that a final turn can still answer after it: the smallest final
   * prompt (pinned messages and a summary of everything), what the step will add to it, and a short answer.
   * It decides whether a step is made, never how long its answer may be.
   */
  private finalTurnReserve(): TokenUsage {
    const compact = this.memory.compactPrompt(false);
    // Asked before every step: the summary, new each time, is estimated from its lines, which mostly are not.
    if (compact) estimateMessageTokensByLine(compact.summary, this.count);
    const smallest = compact?.messages ?? this.prompt();
    const prompt =
      this.estimatePrompt(smallest, undefined) +
      countResponseFormatTokens(this.responseFormat(), this.count) +
      D.FINAL_TURN_PROMPT_GROWTH_TOKENS;
    return { promptTokens: prompt, completionTokens: D.MIN_FINAL_COMPLETION_TOKENS };
  }

  /** Before each step: the memory cuts what its policy says to; a summary it asks for is a model call of the run. */
  private async foldMemory(): Promise<void> {
    const change = await this.memory.fold(this.foldHooks);
    if (!change) return;
    for (const event of change.events) this.trace.noteEvent(event);
    if (change.paidSummary) this.checkpoint();
  }

  /** What the memory's fold may ask of the run (made once: the fold runs before every step). */
  private readonly foldHooks = {
    stepAffordable: () => this.stepAffordable(),
    summarize: (messages: ChatMessage[]) => this.summarize(messages),
  };

  /** A summary for the memory: a model call of the run, reported with the next step's trace. */
  private async summarize(messages: ChatMessage[]): Promise<ModelCallResult> {
    const call = await this.callModel(
      {
        messages,
        tools: undefined,
        desiredMaxTokens: D.SUMMARY_MAX_TOKENS,
        minCompletionTokens: D.SUMMARY_MAX_TOKENS,
        answerBy: this.softDeadline(),
      },
      'summary',
    );
    this.trace.carryOver(call);
    return call;
  }

  /**
   * Whether the budget can pay the next step on the prompt as it is, and a final turn after it. At the prices the
   * run bills at, as the step's own plan is: a resumed run is given the price table of today.
   */
  private stepAffordable(): boolean {
    const prompt = this.estimatePrompt(this.prompt(), this.protocol.requestTools(this.input.tools));
    return planCall(this.state.usage, this.budget, this.price, {
      promptTokens: prompt,
      desiredMaxTokens: this.opts.completionTokens,
      minCompletionTokens: D.MIN_STEP_COMPLETION_TOKENS,
      reserveAfter: this.finalTurnReserve(),
    }).ok;
  }

  private prompt(): ChatMessage[] {
    return this.memory.prompt();
  }

  private estimatePrompt(messages: readonly ChatMessage[], tools: readonly ToolSpec[] | undefined): number {
    return this.calibration.estimate(measurePrompt(messages, tools, this.count));
  }

  private async callModel(
    request: ModelCallRequest,
    purpose: ModelCallStart['purpose'] = 'step',
  ): Promise<ModelCallResult> {
    const result = await this.callModelOnce(request, purpose);
    if (!request.responseFormat || !refusesResponseFormat(result)) return result;
    // The endpoint does not take `response_format` (or this schema in it): the prompt's schema and the check
    // stay, the field goes, for the rest of the run.
    this.state.responseFormatRefused = true;
    this.input.logger?.warn(
      {
        runId: this.state.runId,
        error: !result.ok && result.stop === 'error' ? result.error.message : undefined,
      },
      'the model endpoint refused response_format: asking without it for the rest of the run',
    );
    const again = await this.callModelOnce({ ...request, responseFormat: undefined }, purpose);
    return {
      ...again,
      usage: addUsage(result.usage, again.usage),
      attempts: result.attempts + again.attempts,
      latencyMs: result.latencyMs + again.latencyMs,
    };
  }

  private async callModelOnce(
    request: ModelCallRequest,
    purpose: ModelCallStart['purpose'],
  ): Promise<ModelCallResult> {
    const watch = this.input.observer?.modelCall({
      model: this.input.model.model,
      temperature: this.opts.temperature,
      messages: request.messages,
      tools: request.tools,
      purpose,
    });
    const result = await callModel(
      {
        model: this.input.model,
        price: this.price,
        budget: this.budget,
        count: this.count,
        calibration: this.calibration,
        temperature: this.opts.temperature,
        cacheKey: this.cacheKey,
        reasoning: this.reasoning,
        serviceTier: this.input.options?.serviceTier,
        timeoutMs: this.opts.modelTimeoutMs,
        retries: this.opts.modelRetries,
        retryBaseDelayMs: this.opts.modelRetryBaseDelayMs,
        signal: this.signal,
        now: this.now,
        sleep: this.sleep,
        used: this.state.usage,
        gate: this.input.gate,
        defer: this.deferSettle,
        watch,
      },
      request,
    );
    watch?.ended(result, usageOf(result.usage, this.price).costUsd);
    this.state.usage = addUsage(this.state.usage, result.usage);
    this.state.modelCalls += result.attempts;
    this.state.promptCalibration = this.calibration.state;
    return result;
  }

  /** Takes a settlement of the fleet gate the run does not wait for now, but before it ends. */
  private readonly deferSettle = (settle: Promise<void>): void => {
    this.settles.add(settle);
    void settle.finally(() => this.settles.delete(settle));
  };

  /** Model calls of a step stop this long before the deadline, leaving time for the final answer. */
  private softDeadline(): number {
    return deadlineAt(this.budget, this.state.startedAt) - deadlineReserveMs(this.budget);
  }

  /** Kept in the state, so a resumed run's result still lists it; one entry per call key. */
  private noteUncertain(effect: UncertainEffect): void {
    const others = (this.state.uncertainEffects ?? []).filter((e) => e.callKey !== effect.callKey);
    this.state.uncertainEffects = [...others, effect];
  }

  /**
   * Moves the run's start later by `ms`: time spent waiting for an outage to pass is not charged to the deadline.
   * The tools' deadline signal is remade for the moved deadline.
   */
  private excludeFromDeadline(ms: number): void {
    if (ms <= 0) return;
    this.state.startedAt += ms;
    if (this.state.pending) this.state.pending.trace.startedAt += ms;
    this.toolDeadline?.dispose();
    this.toolDeadline = null;
  }

  private checkpoint(): void {
    this.checkpoints?.push(this.state);
  }

  private async emitStep(
    step: number,
    kind: TraceKind,
    actions: StepTrace['actions'],
    observations: string[],
    call: StepCall,
    error: string | null,
  ): Promise<void> {
    const onStep = this.input.onStep;
    const trace = this.trace.closeStep(
      {
        state: this.state,
        budget: this.budget,
        price: this.price,
        step,
        kind,
        actions,
        observations,
        call,
        error,
      },
      onStep !== undefined,
    );
    if (onStep && trace) await this.notify('step', () => onStep(trace));
  }

  /** Observers never break a run: their failures are logged and swallowed. */
  private async notify(what: string, fn: () => void | Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      this.input.logger?.warn(
        { err: error, runId: this.state.runId, callback: what },
        `${what} callback failed`,
      );
    }
  }

  private finish(
    status: RunStatus,
    stopReason: StopReason,
    answer: string | null,
    error: RunError | null,
    lastCall?: ModelCallResult,
  ): AgentResult {
    if (lastCall) this.trace.carryOver(lastCall);
    this.purse.close();
    const parked =
      stopReason === 'cancelled' || stopReason === 'awaiting_approval' || stopReason === 'awaiting_children';
    if (this.structured && !this.validOutput && !error && !parked) {
      error = outputMissing(stopReason, this.state.outputIssues);
    }
    const result: AgentResult = {
      jobId: this.state.runId,
      status,
      stopReason,
      answer,
      steps: this.state.steps,
      toolCalls: this.state.toolCalls,
      usage: treeUsageOf(this.state, this.price),
      error,
    };
    if (this.state.children) result.children = [...this.state.children];
    if (this.state.recalled?.length) result.notesUsed = [...this.state.recalled];
    if (this.structured) result.output = this.validOutput ? this.validOutput.value : null;
    if (this.stopDetail && (stopReason === 'token_budget' || stopReason === 'cost_budget'))
      result.stopDetail = this.stopDetail;
    // Whatever the status, the result says which side effects may not have happened; an answer that may be
    // missing one is not a success (an email the task was for may never have gone out).
    if (this.state.uncertainEffects?.length) {
      result.uncertainEffects = [...this.state.uncertainEffects];
      if (result.status === 'succeeded') {
        result.status = 'failed';
        result.stopReason = 'error';
        result.error = uncertainEffectsError(result.uncertainEffects);
      }
    }
    // A run cancelled (a worker shutting down), parked for approvals or failed by something worth retrying is
    // not over: its state stays open so the next attempt resumes it instead of replaying this outcome, and the
    // wait until then (for an outage to pass, for a decision) is not its time.
    const final = !parked && !error?.retryable;
    if (final) this.state.result = result;
    else if (error?.retryable || stopReason === 'awaiting_approval') this.state.suspendedAt = this.now();
    this.checkpoint();
    return result;
  }
}

/** The end of an attempt whose tools' dependencies stayed down: the job's retry runs those calls again. */
function toolsUnavailable(tools: string, rounds: number): RunError {
  return {
    kind: 'tool',
    code: 'tool_unavailable',
    message: `Tools could not reach what they depend on after ${rounds} rounds (${tools}).`,
    retryable: true,
  };
}

/** Why a run with an output schema has none: the stop, and the latest reply's issues if it gave one. */
function outputMissing(stopReason: StopReason, issues: string | undefined): RunError {
  const last = issues ? `; the last reply failed the schema: ${issues}` : '';
  return {
    kind: 'model_behavior',
    code: 'output_missing',
    message: `The run stopped (${stopReason}) without a valid output${last}.`,
    retryable: false,
  };
}

/** A 400 whose message names response_format: the endpoint does not take the field (or the schema in it). */
function refusesResponseFormat(result: ModelCallResult): boolean {
  if (result.ok || result.stop !== 'error' || !(result.error instanceof ModelApiError)) return false;
  return result.error.status === 400 && /response_format|json_schema/i.test(result.error.message);
}

/** Text that is a tool call the model wrote instead of calling it: `{"tool": …}` or `{"tools": […]}`. */
function isToolCallText(text: string): boolean {
  if (!/^\s*(\{|```)/.test(text)) return false;
  return parseJsonReply(text).kind === 'actions';
}

function statusOf(reason: StopReason): RunStatus {
  if (reason === 'answer') return 'succeeded';
  if (reason === 'error') return 'failed';
  return 'stopped';
}

/**
 * A reply without calls as memory keeps it: its text as the model wrote it, and the provider's items it came as (a
 * reasoning model's reasoning goes back with it); never an endpoint's other fields.
 */
function asMemory(reply: AssistantMessage): AssistantMessage {
  return { role: 'assistant', content: reply.content ?? '', ...itemsOf(reply) };
}

/** A reply with calls as memory keeps it: each call's id, name and argument string exactly as the model sent them. */
function asCallingTurn(reply: AssistantMessage): AssistantMessage {
  return {
    role: 'assistant',
    content: reply.content ?? null,
    tool_calls: (reply.tool_calls ?? []).map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.function.name, arguments: call.function.arguments },
    })),
    ...itemsOf(reply),
  };
}

/** The provider's items a reply came as, with the model that returned them; nothing when it has none. */
function itemsOf(reply: AssistantMessage): Pick<AssistantMessage, 'items' | 'itemsModel'> {
  if (!reply.items) return {};
  return { items: reply.items, ...(reply.itemsModel ? { itemsModel: reply.itemsModel } : {}) };
}

/** The error of a run that answered while some of its side effects' outcomes are unknown. Not retryable: a
 * retry could repeat an effect that did happen. */
function uncertainEffectsError(effects: readonly UncertainEffect[]): RunError {
  const listed = effects
    .slice(0, 5)
    .map((e) => `${e.what} (${e.why})`)
    .join('; ');
  const more = effects.length > 5 ? `; and ${effects.length - 5} more` : '';
  return {
    kind: 'tool',
    code: 'uncertain_effects',
    message: truncateChars(
      `the model answered, but the outcome of ${effects.length} side effect(s) is unknown: ${listed}${more}`,
      2_000,
    ),
    retryable: false,
  };
}

/** An approver's edit of a child call that the child's schema refuses: the call ends, the model reads why. */
function invalidEdit(call: PlannedCall, why: string): ToolCallRecord {
  return {
    id: call.id,
    tool: call.name,
    args: call.args.ok ? call.args.value : null,
    ok: false,
    output: truncateChars(`Invalid arguments for ${call.name}: ${why}`, 2_000),
    errorCode: 'invalid_arguments',
    latencyMs: 0,
  };
}
