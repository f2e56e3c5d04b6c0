// Every default that changes how a run behaves, in one place. Environment variables (config/env.ts) and
// per-task budgets override the ones they name.

/**
 * LLM_MODEL's default: the newest OpenAI model whose bill the fleet computes exactly, and the one OpenAI names for
 * lower cost and latency ($0.75 / $0.075 cached / $4.50 per million tokens). A reasoning model: its calls carry
 * `reasoning_effort: none` unless told otherwise (docs/models.md). The seed's model was gpt-4-turbo-preview.
 */
export const DEFAULT_MODEL = 'gpt-5.4-mini';

export const DEFAULT_MAX_STEPS = 8;
export const DEFAULT_MAX_TOKENS = 50_000;
export const DEFAULT_MAX_COST_USD = 0.05;
export const DEFAULT_DEADLINE_MS = 300_000;
/**
 * `auto`: the whole transcript, cut only at the limits (docs/memory.md); a number forces the sliding window of that many messages.
 */
export const DEFAULT_MEMORY_WINDOW: number | 'auto' = 'auto';
/**
 * The context window assumed when none is configured: the gpt-4o family's, below every model of the price table's
 * (400,000 for gpt-5.4-mini), so the memory compacts early and no prompt reaches long-context prices (272K).
 */
export const DEFAULT_CONTEXT_TOKENS = 128_000;
/** The auto memory clears old results before the next step would pass this share of the context window. */
export const CONTEXT_FOLD_SHARE = 0.8;
/** The deterministic answer of a run that cannot pay for a model-written one is cut to this length. */
export const DETERMINISTIC_ANSWER_MAX_CHARS = 8_000;
export const DEFAULT_TEMPERATURE = 0.2;
/** The completion limit of a normal step (LLM_MAX_TOKENS), for models that do not reason. */
export const DEFAULT_COMPLETION_TOKENS = 512;
/**
 * The completion limit of a step of a reasoning model that reasons (an effort other than `none`), when none is
 * configured: its reasoning comes out of the limit before its answer, and 512 can all go to reasoning. The budget
 * reserves it before each call like any limit (a call asks for less when less is left).
 */
export const DEFAULT_REASONING_COMPLETION_TOKENS = 4_096;

/** A step that cannot afford this many completion tokens is not made: a tool call needs room. */
export const MIN_STEP_COMPLETION_TOKENS = 64;
/** The last, tool-less turn still needs room for a short answer. */
export const MIN_FINAL_COMPLETION_TOKENS = 24;

/**
 * A step is made only if a final turn on the smallest prompt (everything folded into the summary) stays
 * affordable after it; the step adds about this much to that summary.
 */
export const FINAL_TURN_PROMPT_GROWTH_TOKENS = 60;

/**
 * Our prompt count follows OpenAI's documented per-message overheads, but endpoints differ a little
 * (tool definitions especially), so the pre-call check adds this margin to stay on the safe side. It also covers
 * what the calibration cannot know yet: how much more the next call adds than the calls it learnt from.
 */
export const PROMPT_ESTIMATE_MARGIN = 0.02;
export const PROMPT_ESTIMATE_SLACK_TOKENS = 8;
/**
 * Bounds of the calibration from reported usage: the estimate is never scaled below the count, and one odd report
 * (an endpoint that counts something we never sent) cannot make a run think its prompts cost more than this.
 */
export const PROMPT_RATIO_MAX = 1.5;
export const PROMPT_EXTRA_PER_TOOL_CALL_MAX = 64;
/**
 * Tokens a tool call of the history is planned with beyond the bound until the endpoint has reported a prompt
 * with tool calls in it: an endpoint may count a few more per call than their whole JSON, and a report of a
 * prompt without any cannot say how many. Without it, a final turn squeezed after a report of the first prompt
 * alone (the reports in between missing) passed the limit by those tokens on a history of short calls.
 */
export const PROMPT_EXTRA_PER_TOOL_CALL_UNSEEN = 4;

/** Tool results are cut to this many tokens before they enter memory. */
export const DEFAULT_TOOL_RESULT_MAX_TOKENS = 400;
/**
 * A tool's output is cut to this many characters as the call ends, before the token cut: more than any token
 * limit keeps (AGENT_TOOL_RESULT_MAX_TOKENS allows 100,000), far less than a runaway tool may return.
 */
export const TOOL_OUTPUT_MAX_CHARS = 1_000_000;
export const DEFAULT_TOOL_TIMEOUT_MS = 15_000;
export const DEFAULT_TOOL_TRANSIENT_RETRIES = 2;
export const DEFAULT_TOOL_RETRY_BASE_DELAY_MS = 200;
/**
 * A call that still fails for infrastructure reasons after its own retries (the database or SMTP unreachable) is
 * run again by the kernel, without asking the model, this many times, waiting base · 2^n between rounds
 * (1 + 2 + 4 + 8 = 15 s); then the run ends retryable and the job's retries take over.
 */
export const DEFAULT_INFRA_RETRIES = 4;
export const DEFAULT_INFRA_RETRY_BASE_DELAY_MS = 1_000;

export const DEFAULT_MODEL_TIMEOUT_MS = 60_000;
/** Retries of a retryable model API error inside one step. */
export const DEFAULT_MODEL_RETRIES = 3;
export const DEFAULT_MODEL_RETRY_BASE_DELAY_MS = 500;
export const MAX_MODEL_RETRY_DELAY_MS = 20_000;

/** Time kept back before the deadline for the final answer turn: this share of the deadline, capped. */
export const DEADLINE_RESERVE_SHARE = 0.15;
export const DEADLINE_RESERVE_MAX_MS = 10_000;

/** A model-written summary is worth its call only when the folded part is at least this big. */
export const SUMMARY_MIN_TOKENS = 600;
export const SUMMARY_MAX_TOKENS = 200;

/** Observations are cut to this many characters in traces (memory has its own, token-based limit). */
export const TRACE_OBSERVATION_MAX_CHARS = 2_000;

/**
 * A flex call falls back to the default tier once less than this share of the run's deadline (at most the cap) is
 * left before the call must be answered: flex is slow and sometimes unavailable, the deadline is not.
 */
export const FLEX_FALLBACK_SHARE = 0.25;
export const FLEX_FALLBACK_MAX_MS = 120_000;
