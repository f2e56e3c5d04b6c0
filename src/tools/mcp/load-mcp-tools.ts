// HOOK (part 3 of the "your agents, your tools" work): turns the configured MCP servers into the fleet's tools.
// A placeholder until the MCP client lands here; the worker calls it at start with the configuration's servers.
import type { McpServerConfig } from '../../agent/define-fleet.js';
import type { Logger } from '../../logging/logger.js';
import type { Tool } from '../tool.js';

export interface LoadedMcpTools {
  tools: Tool[];
  close(): Promise<void>;
}

export async function loadMcpTools(
  servers: readonly McpServerConfig[],
  _logger: Logger,
): Promise<LoadedMcpTools> {
  if (servers.length > 0) throw new Error('MCP servers are not supported yet');
  return { tools: [], close: async () => undefined };
}
