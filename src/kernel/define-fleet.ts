// A fleet configuration: the agents a worker serves, the tools they may use, and the MCP servers that add tools.
// `defineFleet` checks what it can without opening anything (names, schemas); the worker checks the rest
// (tools of tool sources and MCP servers, known only once opened) with `checkFleetTools` at start.
import { z } from 'zod';
import { AGENT_NAME, type AgentDefinition } from './define-agent.js';
import { ConfigError } from './errors.js';
import type { Tool } from './tool.js';
import { childAgentTool, childToolName } from './child-calls.js';

/**
 * Tools that need what the worker holds (the store, its logger) or a connection of their own: opened once at
 * worker start, closed at its stop. `names` are known before it opens, so the configuration can be checked.
 */
export interface ToolSource<Services = never> {
  readonly kind: 'tool-source';
  readonly names: readonly string[];
  open(services: Services): Promise<{ tools: Tool[]; close(): Promise<void> }>;
}

/**
 * An MCP server whose tools the worker lists at start: stdio (`command`) or Streamable HTTP (`url`), exactly one.
 * The worker's MCP adapter (src/tools/mcp) validates it in full and names the field it refuses.
 */
export interface McpServerConfig {
  /** Names the server in logs and, by default, prefixes its tools' names (`${name}_${tool}`). */
  name: string;
  /** Stdio: the program to start; it gets `env` and the SDK's safe defaults (PATH, HOME…), nothing else. */
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Streamable HTTP: the endpoint, and headers sent with every request (e.g. Authorization). */
  url?: string;
  headers?: Record<string, string>;
  /** MCP tools may have side effects unless marked read-only: all of the server's (true), or those named. */
  readOnly?: boolean | string[];
  /** Per-call limit in ms. Default 30 s. */
  timeoutMs?: number;
  /** Prefix of the fleet's names for this server's tools. Default `name`; `''` keeps the bare names. */
  toolPrefix?: string;
}

export interface FleetDefinition {
  agents: readonly AgentDefinition[];
  tools?: readonly (Tool | ToolSource)[];
  mcpServers?: readonly McpServerConfig[];
}

export interface Fleet {
  readonly agents: ReadonlyMap<string, AgentDefinition>;
  /** Plain tools: the configuration's and those defined inside agents. */
  readonly tools: readonly Tool[];
  readonly sources: readonly ToolSource[];
  readonly mcpServers: readonly McpServerConfig[];
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Throws a ConfigError naming the first problem: a duplicate name, a bad name, a schema JSON Schema cannot express. */
export function defineFleet(definition: FleetDefinition): Fleet {
  const agents = new Map<string, AgentDefinition>();
  const tools: Tool[] = [];
  const sources: ToolSource[] = [];
  const toolNames = new Map<string, Tool | ToolSource>();
  const addTool = (tool: Tool, where: string) => {
    const known = toolNames.get(tool.name);
    if (known === tool) return;
    if (known) fail(`tool "${tool.name}" is defined twice (${where})`);
    if (!TOOL_NAME.test(tool.name)) fail(`tool name "${tool.name}" is invalid (${where})`);
    toJsonSchema(tool.parameters, `tool "${tool.name}" parameters`);
    const rule = tool.needsApproval;
    if (rule !== undefined && typeof rule !== 'boolean' && typeof rule !== 'function')
      fail(
        `tool "${tool.name}": needsApproval must be true, false or a function of the arguments (${where})`,
      );
    const facts = tool.keepsFacts as unknown;
    if (facts !== undefined && typeof facts !== 'boolean')
      fail(`tool "${tool.name}": keepsFacts must be true or false (${where})`);
    if (facts === true && tool.readOnly !== true)
      fail(
        `tool "${tool.name}": keepsFacts needs readOnly: true (a result with side effects is no fact) (${where})`,
      );
    toolNames.set(tool.name, tool);
    tools.push(tool);
  };
  for (const entry of definition.tools ?? []) {
    if (isToolSource(entry)) {
      for (const name of entry.names) {
        if (toolNames.has(name)) fail(`tool "${name}" is defined twice`);
        toolNames.set(name, entry);
      }
      sources.push(entry);
    } else addTool(entry, 'in tools');
  }
  for (const agent of withChildren(definition.agents)) {
    if (!AGENT_NAME.test(agent.name)) fail(`agent name "${agent.name}" is invalid`);
    if (agents.has(agent.name)) fail(`agent "${agent.name}" is defined twice`);
    for (const tool of agent.tools) if (typeof tool !== 'string') addTool(tool, `in agent "${agent.name}"`);
    for (const child of agent.agents ?? []) addTool(childTools.of(child), `as agent "${agent.name}"'s child`);
    if (agent.input) toJsonSchema(agent.input, `agent "${agent.name}" input`);
    if (agent.output) toJsonSchema(agent.output, `agent "${agent.name}" output`);
    checkCeiling(agent);
    agents.set(agent.name, agent);
  }
  const mcpServers = definition.mcpServers ?? [];
  const serverNames = new Set<string>();
  for (const server of mcpServers) {
    if (serverNames.has(server.name)) fail(`MCP server "${server.name}" is defined twice`);
    if (!server.command === !server.url) fail(`MCP server "${server.name}" needs one of command or url`);
    serverNames.add(server.name);
  }
  // Names of MCP tools are known once the servers are listed: the worker checks those agents then.
  if (mcpServers.length === 0) checkFleetTools(agents, new Set(toolNames.keys()));
  return { agents, tools, sources, mcpServers };
}

/**
 * Every tool an agent names exists in the fleet. `mcpPrefixes`: the MCP servers' tool-name prefixes, so a name
 * given without one gets a hint.
 */
export function checkFleetTools(
  agents: ReadonlyMap<string, AgentDefinition>,
  available: ReadonlySet<string>,
  mcpPrefixes: readonly string[] = [],
): void {
  for (const agent of agents.values()) {
    for (const tool of agent.tools) {
      const name = typeof tool === 'string' ? tool : tool.name;
      if (!available.has(name))
        fail(`agent "${agent.name}" names unknown tool "${name}"${prefixHint(name, available, mcpPrefixes)}`);
    }
  }
}

/** For a name given without its MCP server's prefix: the prefixed names that exist. */
function prefixHint(name: string, available: ReadonlySet<string>, prefixes: readonly string[]): string {
  const prefixed = prefixes
    .filter((prefix) => prefix !== '' && available.has(`${prefix}_${name}`))
    .map((prefix) => `"${prefix}_${name}"`);
  return prefixed.length === 0
    ? ''
    : ` (did you mean ${prefixed.join(' or ')}? MCP tools are named <server>_<tool>)`;
}

/** The names of an agent's tools, in its order, then those of the agents it may call (child-calls.ts). */
export function toolNamesOf(agent: AgentDefinition): string[] {
  return [
    ...agent.tools.map((tool) => (typeof tool === 'string' ? tool : tool.name)),
    ...(agent.agents ?? []).map((child) => childToolName(child.name)),
  ];
}

/** One tool per child agent, however many parents call it: the fleet holds each tool once. */
const childTools = {
  made: new WeakMap<AgentDefinition, Tool>(),
  of(child: AgentDefinition): Tool {
    let tool = this.made.get(child);
    if (!tool) this.made.set(child, (tool = childAgentTool(child)));
    return tool;
  },
};

/**
 * The fleet's agents and, after them, every agent one of them may call that the list does not name itself (the
 * same definition, named once, is one agent).
 */
function withChildren(listed: readonly AgentDefinition[]): AgentDefinition[] {
  const all = [...listed];
  const seen = new Set(listed);
  for (let i = 0; i < all.length; i++) {
    for (const child of all[i]!.agents ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      // Its model would be offered one agent's schema while the worker runs another.
      if (all.some((agent) => agent.name === child.name))
        fail(`agent "${child.name}" is defined twice (as "${all[i]!.name}"'s child and as another agent)`);
      all.push(child);
    }
  }
  return all;
}

export function isToolSource(entry: Tool | ToolSource): entry is ToolSource {
  return (entry as ToolSource).kind === 'tool-source';
}

/** The JSON Schema of a zod schema as the catalog and the model see it; throws a ConfigError naming `what`. */
export function toJsonSchema(schema: z.ZodType, what: string): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
  } catch (error) {
    return fail(
      `${what}: cannot become JSON Schema (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

function checkCeiling(agent: AgentDefinition): void {
  for (const [field, ceiling] of Object.entries(agent.budgetCeiling ?? {})) {
    const value = agent.budget?.[field as keyof typeof agent.budget];
    if (value !== undefined && ceiling !== undefined && value > ceiling) {
      fail(`agent "${agent.name}": budget.${field} ${value} is above its budgetCeiling ${ceiling}`);
    }
  }
}

function fail(message: string): never {
  throw new ConfigError('bad_fleet_config', `fleet configuration: ${message}`);
}
