// One model call as the loop makes it: planned against the budget before every attempt, bounded in time,
// retried on retryable API errors (honouring retry-after), and charged for every attempt it made.
import type { CallGate } from './call-gate.js';
import { ModelApiError, SystemError } from './errors.js';
import { costUsd } from './pricing.js';
import {
  addUsage,
  describeBudgetStop,
  planCall,
  usageSince,
  type Budget,
  type TokenUsage,
} from './budget.js';
import {
  DEFAULT_MODEL_RETRY_BASE_DELAY_MS,
  FLEX_FALLBACK_MAX_MS,
  FLEX_FALLBACK_SHARE,
  MAX_MODEL_RETRY_DELAY_MS,
} from './defaults.js';
import type { ChatMessage, ResponseFormat, ToolSpec } from './messages.js';
import { measurePrompt, type PromptCalibration } from './prompt-calibration.js';
import type { ChatCompletion, ChatModel, ChatRequest, ServiceTier } from './chat-model.js';
import type { ModelPrice } from './pricing.js';
import { countCompletionTokens, countResponseFormatTokens, type TokenCounter } from './tokens.js';
import type { ModelCallWatch } from './run-observer.js';
import type { ModelCallCharge, ModelCallResult } from './model-call-result.js';

export type { ModelCallResult } from './model-call-result.js';

export interface ModelCallEnv {
  model: ChatModel;
  price: ModelPrice;
  budget: Budget;
  count: TokenCounter;
  /** The run's prompt estimate; learns from the usage this call reports. */
  calibration: PromptCalibration;
  temperature: number;
  /** Sent as the provider's prompt cache key (`ChatRequest.cacheKey`). */
  cacheKey?: string;
  /** Set for a reasoning model (no temperature, `max_completion_tokens`, the effort asked for). */
  reasoning?: ChatRequest['reasoning'];
  /** `flex`: calls go at the flex tier, and at the default tier near the deadline or once flex stayed unavailable. */
  serviceTier?: ServiceTier | undefined;
  timeoutMs: number;
  retries: number;
  retryBaseDelayMs?: number;
  signal: AbortSignal;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Usage of the run so far, before this call. */
  used: TokenUsage;
  /** Limits shared with the rest of the fleet; absent, only the run's budget applies. */
  gate?: CallGate;
  /**
   * Takes a settlement of the gate that the call does not wait for (the run awaits it before it ends). The gate
   * books the worst case before each call, so a settlement landing late only ever overstates what was spent.
   * Absent, every settlement is awaited.
   */
  defer?: (settle: Promise<void>) => void;
  /** Told of each attempt sent and each that failed (run-observer.ts). */
  watch?: ModelCallWatch;
}

export interface ModelCallRequest {
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[] | undefined;
  /** The reply's required shape, sent as `response_format`; its schema counts as prompt. */
  responseFormat?: ResponseFormat;
  desiredMaxTokens: number;
  minCompletionTokens: number;
  /** Usage that must stay affordable after this call. */
  reserveAfter?: TokenUsage;
  /** The call must be answered by then (ms since epoch). */
  answerBy: number;
}

// An attempt that may have been processed but reported nothing (timed out, aborted in flight, garbled body)
// is charged its whole reservation: the bill must never come out lower than what the provider charges.
export const CHARGED_WHEN_UNANSWERED: ReadonlySet<string> = new Set([
  'timeout',
  'aborted',
  'malformed_response',
  'empty_response',
]);

export async function callModel(env: ModelCallEnv, request: ModelCallRequest): Promise<ModelCallResult> {
  const started = env.now();
  const promptSize = measurePrompt(request.messages, request.tools, env.count);
  promptSize.bound += countResponseFormatTokens(request.responseFormat, env.count);
  const promptEstimate = env.calibration.estimate(promptSize);
  let charged: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  const cost = (attempts: number): ModelCallCharge => ({
    usage: charged,
    attempts,
    latencyMs: env.now() - started,
  });
  // Set once flex stayed unavailable through the retries: the rest of the call goes at the default tier.
  let flexGaveUp = false;

  for (let attempt = 1; ; attempt++) {
    if (env.signal.aborted) return { ok: false, stop: 'cancelled', ...cost(attempt - 1) };
    const used = addUsage(env.used, charged);
    const need = {
      promptTokens: promptEstimate,
      desiredMaxTokens: request.desiredMaxTokens,
      minCompletionTokens: request.minCompletionTokens,
      reserveAfter: request.reserveAfter,
    };
    const plan = planCall(used, env.budget, env.price, need);
    if (!plan.ok) {
      const message = describeBudgetStop(used, env.budget, env.price, need, plan.reason);
      return { ok: false, stop: plan.reason, message, ...cost(attempt - 1) };
    }
    if (request.answerBy - env.now() <= 0) return { ok: false, stop: 'deadline', ...cost(attempt - 1) };
    const worstCase = {
      tokens: promptEstimate + plan.maxTokens,
      costUsd: costUsd(env.price, { promptTokens: promptEstimate, completionTokens: plan.maxTokens }),
    };
    let ticket: string | undefined;
    if (env.gate) {
      let decision;
      try {
        decision = await env.gate.acquire(worstCase, env.signal, {
          timeLeftMs: request.answerBy - env.now(),
        });
      } catch (error) {
        if (env.signal.aborted) return { ok: false, stop: 'cancelled', ...cost(attempt - 1) };
        const message = error instanceof Error ? error.message : String(error);
        const failure = new SystemError(
          'gate_unavailable',
          `The fleet's spend ledger is unavailable: ${message}`,
          {
            retryable: true,
            cause: error,
          },
        );
        return { ok: false, stop: 'error', error: failure, ...cost(attempt - 1) };
      }
      if (!decision.ok)
        return { ok: false, stop: decision.reason, message: decision.message, ...cost(attempt - 1) };
      ticket = decision.ticket;
    }
    // Waiting at the gate took time: what is left of it bounds the call. Whole milliseconds: a deadline's reserve
    // (a share of it) can be fractional, and HTTP clients refuse a fractional timeout.
    const timeoutMs = Math.floor(Math.min(env.timeoutMs, request.answerBy - env.now()));
    const chargedBefore = charged;
    if (timeoutMs <= 0) {
      await settleGate(env, ticket, chargedBefore, charged);
      return { ok: false, stop: 'deadline', ...cost(attempt - 1) };
    }

    env.watch?.attempt(attempt, plan.maxTokens);
    try {
      const completion = await env.model.complete(chatRequest(env, request, plan.maxTokens, flexGaveUp), {
        signal: env.signal,
        timeoutMs,
      });
      // The endpoint's count is authoritative; when it reports none, our estimate stands in.
      if (completion.usage) env.calibration.observe(promptSize, completion.usage.promptTokens);
      const usage = chargedUsageOf(completion, promptEstimate, env.count);
      charged = addUsage(charged, usage);
      await settleGate(env, ticket, chargedBefore, charged);
      return { ok: true, completion, ...cost(attempt) };
    } catch (error) {
      const apiError =
        error instanceof ModelApiError
          ? error
          : new ModelApiError('unknown', String(error), { retryable: false, cause: error });
      env.watch?.attemptFailed(attempt, apiError);
      if (CHARGED_WHEN_UNANSWERED.has(apiError.code)) {
        charged = addUsage(charged, { promptTokens: promptEstimate, completionTokens: plan.maxTokens });
      }
      await settleGate(env, ticket, chargedBefore, charged);
      // Flex lacking capacity is not a rate limit: the fleet's other calls go on at full speed.
      const flexUnavailable = apiError.code === 'flex_unavailable';
      if (apiError.status === 429 && !flexUnavailable) env.gate?.rateLimited?.(apiError.retryAfterMs);
      if (env.signal.aborted) return { ok: false, stop: 'cancelled', ...cost(attempt) };
      if (apiError.code === 'timeout' && env.now() >= request.answerBy) {
        return { ok: false, stop: 'deadline', ...cost(attempt) };
      }
      if (!apiError.retryable || attempt > env.retries) {
        if (!flexUnavailable || flexGaveUp)
          return { ok: false, stop: 'error', error: apiError, ...cost(attempt) };
        flexGaveUp = true; // one more attempt, at the default tier
        continue;
      }
      const backoff =
        (env.retryBaseDelayMs ?? DEFAULT_MODEL_RETRY_BASE_DELAY_MS) *
        2 ** (attempt - 1) *
        (0.5 + Math.random() / 2);
      const delay = Math.min(
        apiError.retryAfterMs ?? backoff,
        MAX_MODEL_RETRY_DELAY_MS,
        Math.max(0, request.answerBy - env.now()),
      );
      try {
        await env.sleep(delay, env.signal);
      } catch {
        return { ok: false, stop: 'cancelled', ...cost(attempt) };
      }
    }
  }
}

/** The attempt's request: the optional fields only when set, always in this order. */
function chatRequest(
  env: ModelCallEnv,
  request: ModelCallRequest,
  maxTokens: number,
  flexGaveUp: boolean,
): ChatRequest {
  const chat: ChatRequest = {
    messages: request.messages,
    tools: request.tools,
    maxTokens,
    temperature: env.temperature,
  };
  if (env.cacheKey) chat.cacheKey = env.cacheKey;
  if (env.reasoning) chat.reasoning = env.reasoning;
  if (env.serviceTier) chat.serviceTier = tierOf(env, request, flexGaveUp);
  if (request.responseFormat) chat.responseFormat = request.responseFormat;
  return chat;
}

/**
 * Settles the gate's booking of an attempt with what it charged (nothing without a gate): handed to `defer` when
 * the run takes settlements, awaited otherwise.
 */
async function settleGate(
  env: ModelCallEnv,
  ticket: string | undefined,
  before: TokenUsage,
  after: TokenUsage,
): Promise<void> {
  if (!env.gate || ticket === undefined) return;
  const spent = usageSince(before, after);
  const settled = env.gate
    .release(ticket, {
      tokens: spent.promptTokens + spent.completionTokens,
      costUsd: costUsd(env.price, spent),
    })
    .catch(() => undefined);
  if (env.defer) env.defer(settled);
  else await settled;
}

/**
 * What a completion charges the run: the endpoint's count with its cached and reasoning parts, at the tier the
 * response names; our estimate, flagged, when it reported none (a local server).
 */
function chargedUsageOf(completion: ChatCompletion, promptEstimate: number, count: TokenCounter): TokenUsage {
  const reported = completion.usage;
  const usage: TokenUsage = reported
    ? {
        promptTokens: reported.promptTokens,
        completionTokens: reported.completionTokens,
        ...(reported.cachedPromptTokens ? { cachedPromptTokens: reported.cachedPromptTokens } : {}),
        ...(reported.reasoningTokens ? { reasoningTokens: reported.reasoningTokens } : {}),
      }
    : {
        promptTokens: promptEstimate,
        completionTokens: countCompletionTokens(
          completion.message.content,
          completion.message.tool_calls,
          count,
        ),
        estimated: true,
      };
  if (completion.serviceTier === 'flex') {
    usage.flex = {
      promptTokens: usage.promptTokens,
      cachedPromptTokens: usage.cachedPromptTokens ?? 0,
      completionTokens: usage.completionTokens,
    };
  }
  return usage;
}

/** The tier of this attempt: flex until the deadline comes near or flex gave up, then the default tier. */
function tierOf(env: ModelCallEnv, request: ModelCallRequest, flexGaveUp: boolean): ServiceTier {
  if (env.serviceTier !== 'flex' || flexGaveUp) return 'default';
  const margin = Math.min(env.budget.deadlineMs * FLEX_FALLBACK_SHARE, FLEX_FALLBACK_MAX_MS);
  return request.answerBy - env.now() < margin ? 'default' : 'flex';
}
