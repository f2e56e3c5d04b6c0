// The public kernel: what a fleet configuration imports to define its agents and tools. No adapters here
// (no queue, store, mail or HTTP): a configuration that imports only this runs anywhere the kernel does.
export { defineAgent, type AgentDefinition } from './agent/define-agent.js';
export {
  defineFleet,
  type Fleet,
  type FleetDefinition,
  type McpServerConfig,
  type ToolSource,
} from './agent/define-fleet.js';
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
} from './tools/tool.js';
export { ToolError, TransientToolError, ConfigError, InputError } from './agent/errors.js';
export type { Budget } from './agent/budget.js';
export type { AgentResult, RunStatus, StopReason } from './agent/types.js';
// The loop itself, for a process of its own: runAgent with a ChatModel (one completion; the OpenAI adapter is
// the worker's) and a ToolRegistry. It does no I/O but what the model and the tools do.
export { runAgent, type AgentRunInput, type AgentRunOptions, type KernelLogger } from './agent/run-agent.js';
export { ToolRegistry } from './tools/registry.js';
export type { ChatCompletion, ChatModel, ChatRequest, ChatUsage } from './llm/chat-model.js';
export type { Checkpoint, RunState, StepTrace } from './agent/types.js';
export type { ModelPrice } from './llm/pricing.js';
// The zod the kernel converts schemas with: a plain-JS configuration imports it from here, so its schemas and
// the kernel's are of one zod.
export { z } from 'zod';
