// The result (docs/tasks-and-results.md#the-result) as a zod schema, for readers of results in other processes
// and languages: the client exports it and the HTTP API's OpenAPI document is generated from it. Objects are
// loose: the format adds fields and never removes one, so a reader keeps what it knows and ignores the rest.
import { z } from 'zod';
import type { RunError } from './errors.js';
import type { Usage } from './budget.js';
import { STOP_REASONS, type AgentResult, type RunUsage, type UncertainEffect } from './types.js';
import { agree, type Known, type Same } from '../util/schema-agreement.js';

const count = z.number().int().min(0);

export const usageSchema = z
  .looseObject({
    promptTokens: count,
    completionTokens: count,
    totalTokens: count.describe('promptTokens + completionTokens'),
    costUsd: z.number().min(0),
    cachedPromptTokens: count.describe('part of promptTokens, billed at the cached-input price').optional(),
    reasoningTokens: count.describe('part of completionTokens').optional(),
    estimated: z.literal(true).describe('present when the endpoint reported no usage').optional(),
    flex: z
      .object({ promptTokens: count, cachedPromptTokens: count, completionTokens: count })
      .describe('the part of the tokens above billed at the flex tier')
      .optional(),
    flexSavedUsd: z.number().describe('what the flex part saved against the standard prices').optional(),
  })
  .describe('Every model call of the job, summaries and retries included.');

/** A result's usage: its tree's, with the run's own part as `self` when it called child agents. */
export const runUsageSchema = usageSchema
  .extend({
    self: usageSchema
      .describe("the run's own calls, without its child agents' (present only when it called some)")
      .optional(),
    embeddings: z
      .object({ calls: count, tokens: count, costUsd: z.number().min(0) })
      .describe(
        "the run's own embedding calls (notes looked up and kept by similarity): part of promptTokens, totalTokens and costUsd above (present only when there were some)",
      )
      .optional(),
  })
  .describe(
    "Every model call of the job's tree (its child agents' included), summaries and retries included.",
  );

export const runErrorSchema = z
  .looseObject({
    kind: z.enum(['config', 'input', 'model_api', 'model_behavior', 'tool', 'system']),
    code: z.string(),
    message: z.string(),
    retryable: z.boolean(),
  })
  .describe('Why a run failed or stopped without an output; branch on kind and code.');

export const uncertainEffectSchema = z
  .looseObject({
    tool: z.string(),
    callKey: z.string(),
    what: z.string(),
    why: z.string(),
  })
  .describe('A side effect that may or may not have happened.');

export const agentResultSchema = z
  .looseObject({
    jobId: z.string(),
    status: z.enum(['succeeded', 'stopped', 'failed']),
    stopReason: z.enum(STOP_REASONS),
    answer: z.string().nullable(),
    steps: count,
    toolCalls: count,
    usage: runUsageSchema,
    error: runErrorSchema.nullable(),
    uncertainEffects: z.array(uncertainEffectSchema).optional(),
    output: z.unknown().describe('an agent with an output schema: the validated value, or null').optional(),
    stopDetail: z
      .string()
      .describe(
        'a budget stop: what was left, what the next call needed, what other jobs held reserved; a cancel: who and when',
      )
      .optional(),
    awaitingApproval: z
      .array(
        z.object({
          callKey: z.string(),
          callId: z.string(),
          step: count,
          tool: z.string(),
          arguments: z.unknown(),
          requestedAt: z.number(),
        }),
      )
      .describe('never in a published result: what a parked run (stopReason awaiting_approval) waits on')
      .optional(),
    awaitingChildren: z
      .array(
        z.object({
          callKey: z.string(),
          callId: z.string(),
          step: count,
          agent: z.string(),
          input: z.unknown(),
          budget: z.object({ maxTokens: z.number(), maxCostUsd: z.number(), deadlineMs: z.number() }),
        }),
      )
      .describe('never in a published result: the child agents a parked run (awaiting_children) waits on')
      .optional(),
    notesUsed: z
      .array(z.string())
      .describe('the notes of earlier runs the run was given, by id (docs/notes.md)')
      .optional(),
    children: z
      .array(
        z.object({
          jobId: z.string(),
          agent: z.string(),
          status: z.enum(['succeeded', 'stopped', 'failed']),
          stopReason: z.enum(STOP_REASONS),
          usage: usageSchema,
        }),
      )
      .describe('the child agents the run called; its usage then covers the whole tree')
      .optional(),
  })
  .describe('The result of a task (docs/tasks-and-results.md#the-result).');

// The schemas and the kernel's types describe the same JSON: a field added to one and not the other, or typed
// differently, fails the type check here. (The loose objects' index signatures are left out of the comparison.)
agree<Same<Known<z.infer<typeof usageSchema>>, Usage>>();
agree<Same<Omit<Known<z.infer<typeof runUsageSchema>>, 'self'>, Omit<RunUsage, 'self'>>>();
agree<Same<Known<NonNullable<z.infer<typeof runUsageSchema>['self']>>, Usage>>();
agree<Same<Known<z.infer<typeof runErrorSchema>>, RunError>>();
agree<Same<Known<z.infer<typeof uncertainEffectSchema>>, UncertainEffect>>();
type Loose = 'usage' | 'error' | 'uncertainEffects' | 'children';
type ResultFields = Omit<Known<z.infer<typeof agentResultSchema>>, Loose>;
agree<Same<ResultFields, Omit<AgentResult, Loose>>>();
