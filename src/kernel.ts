// The public kernel: what a fleet configuration imports to define its agents and tools. No adapters here
// (no queue, store, mail or HTTP): a configuration that imports only this runs anywhere the kernel does.
export { defineAgent, type AgentDefinition } from './kernel/define-agent.js';
export {
  defineFleet,
  type Fleet,
  type FleetDefinition,
  type McpServerConfig,
  type ToolSource,
} from './kernel/define-fleet.js';
export {
  defineTool,
  UncertainOutcome,
  type EffectHooks,
  type EffectLookupAnswer,
  type EffectSweepOutcome,
  type OnceOptions,
  type PendingEffect,
  type Tool,
  type ToolContext,
} from './kernel/tool.js';
export { ToolError, TransientToolError, ConfigError, InputError } from './kernel/errors.js';
export type { Budget } from './kernel/budget.js';
export type { AgentResult, RunStatus, StopReason } from './kernel/types.js';
// The loop itself, for a process of its own: runAgent with a ChatModel (one completion; the OpenAI adapter is
// the worker's) and a ToolRegistry. It does no I/O but what the model and the tools do.
export { runAgent, type AgentRunInput, type AgentRunOptions, type KernelLogger } from './kernel/run-agent.js';
export { ToolRegistry } from './kernel/tool-registry.js';
export type { ChatCompletion, ChatModel, ChatRequest, ChatUsage } from './kernel/chat-model.js';
export type { Checkpoint, RunState, StepTrace } from './kernel/types.js';
export type { ModelPrice } from './kernel/pricing.js';
export type {
  ApprovalContext,
  ApprovalDecision,
  ApprovalPolicy,
  ApprovalRequest,
  NeedsApproval,
  RunApprovals,
} from './kernel/approval.js';
// The zod the kernel converts schemas with: a plain-JS configuration imports it from here, so its schemas and
// the kernel's are of one zod.
export { z } from 'zod';
