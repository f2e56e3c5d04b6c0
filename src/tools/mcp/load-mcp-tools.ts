// MCP servers as tool sources: connects to each configured server at worker start, lists its tools and
// turns them into the fleet's tools. The set of tools is fixed at start (the registry, the catalog and the
// agents' tool lists are built from it); a later listing (after a reconnect, or tools/list_changed) updates
// what each server offers: a tool it dropped fails as an observation, a tool it added is logged.
import type { Logger } from '../../logging/logger.js';
import { ConfigError } from '../../kernel/errors.js';
import { sleep } from '../../kernel/sleep.js';
import type { Tool } from '../../kernel/tool.js';
import { McpConnection, type McpConnectionOptions } from './mcp-connection.js';
import { validateMcpServers, type McpServerConfig } from './mcp-server-config.js';
import { mcpToolToFleetTool } from './mcp-tool.js';
import { fleetToolName } from './mcp-tool-name.js';

export type { McpServerConfig } from './mcp-server-config.js';
/** For a configuration loader that checks the entries before anything connects. */
export { validateMcpServers } from './mcp-server-config.js';

export interface LoadMcpToolsOptions extends Partial<McpConnectionOptions> {
  /** Tries to reach a server at start before giving up. */
  startAttempts?: number;
}

const DEFAULTS: McpConnectionOptions & { startAttempts: number } = {
  connectTimeoutMs: 15_000,
  reconnectBaseDelayMs: 500,
  reconnectMaxDelayMs: 30_000,
  startAttempts: 3,
};

/**
 * The tools of every server, named `${toolPrefix ?? name}_${tool}`. Throws a ConfigError naming the field
 * (`mcpServers[0].url`) for a bad configuration, or the server that cannot be reached at start.
 */
export async function loadMcpTools(
  servers: readonly McpServerConfig[],
  logger: Logger,
  options: LoadMcpToolsOptions = {},
): Promise<{ tools: Tool[]; close(): Promise<void> }> {
  const settings = { ...DEFAULTS, ...options };
  const configs = validateMcpServers(servers);
  const connections = configs.map(
    (config) => new McpConnection(config, logger.child({ mcpServer: config.name }), settings),
  );
  const close = async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  };

  const started = await Promise.allSettled(
    connections.map((connection) => startWithRetries(connection, settings.startAttempts)),
  );
  const failed = started.findIndex((outcome) => outcome.status === 'rejected');
  if (failed >= 0) {
    await close();
    const reason = (started[failed] as PromiseRejectedResult).reason as unknown;
    throw new ConfigError(
      'mcp_server_unavailable',
      `mcpServers[${failed}] ("${configs[failed]!.name}"): could not connect and list its tools: ${
        reason instanceof Error ? reason.message : String(reason)
      }`,
      // The server may only be down for now: a supervised worker is started again rather than given up on.
      { retryable: true, cause: reason },
    );
  }

  const tools: Tool[] = [];
  const taken = new Set<string>();
  connections.forEach((connection, index) => {
    const serverLog = logger.child({ mcpServer: connection.config.name });
    const prefix = connection.config.toolPrefix ?? connection.config.name;
    const offered = new Set<string>();
    for (const listed of connection.tools) {
      const name = fleetToolName(prefix, listed.name);
      if (name === undefined || taken.has(name)) {
        serverLog.warn(
          { tool: listed.name, as: name },
          name === undefined
            ? 'MCP tool name too long for a function name; skipped'
            : 'MCP tool name taken; skipped',
        );
        continue;
      }
      taken.add(name);
      offered.add(listed.name);
      tools.push(mcpToolToFleetTool(name, listed, connection, serverLog));
    }
    const readOnly = connection.config.readOnly;
    for (const unknown of Array.isArray(readOnly) ? readOnly.filter((name) => !offered.has(name)) : []) {
      serverLog.warn(
        { field: `mcpServers[${index}].readOnly`, tool: unknown },
        'readOnly names no tool of the server',
      );
    }
    connection.onToolsListed = (listedNow) => {
      const added = listedNow.map((tool) => tool.name).filter((name) => !offered.has(name));
      const dropped = [...offered].filter((name) => !listedNow.some((tool) => tool.name === name));
      if (added.length > 0 || dropped.length > 0) {
        serverLog.warn(
          { added, dropped },
          'MCP server changed its tools; added tools are offered after a restart',
        );
      }
    };
    serverLog.info(
      { tools: offered.size, transport: connection.config.url ? 'http' : 'stdio' },
      'MCP server connected',
    );
  });
  return { tools, close };
}

async function startWithRetries(connection: McpConnection, attempts: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await connection.start();
      return;
    } catch (error) {
      if (attempt >= attempts) throw error;
      await sleep(500 * 2 ** (attempt - 1));
    }
  }
}
