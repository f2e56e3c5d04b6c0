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
