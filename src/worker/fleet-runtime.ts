// A fleet configuration opened in a worker: its tool sources and MCP servers opened, every agent's tools
// checked to exist, each tool with side effects given the effect ledger behind `ctx.once` (with the tool's
// `effects` hooks), and the sweeper that settles those tools' effects left pending started.
import { checkFleetTools, type Fleet } from '../kernel/define-fleet.js';
import type { AgentDefinition } from '../kernel/define-agent.js';
import { ConfigError } from '../kernel/errors.js';
import type { EffectLedger } from '../effects/effect-ledger.js';
import {
  DEFAULT_PENDING_GRACE_MS,
  EffectUncertainError,
  onceOptionsOf,
  runOnce,
} from '../effects/effect-once.js';
import { startEffectSweeper, sweptToolsOf } from '../effects/effect-sweeper.js';
import { UncertainOutcome, type Tool } from '../kernel/tool.js';
import { StaticToolProvider, type ToolProvider } from './tool-provider.js';
import { effectLedgerOf } from '../effects/effect-ledger-of.js';
import type { WorkerServices } from './worker-services.js';

export interface FleetRuntime {
  agents: ReadonlyMap<string, AgentDefinition>;
  tools: ToolProvider;
  /** Every tool the fleet serves, as defined (for the catalog). */
  toolList: readonly Tool[];
  close(): Promise<void>;
}

export async function openFleet(fleet: Fleet, services: WorkerServices): Promise<FleetRuntime> {
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    const tools = [...fleet.tools];
    for (const source of fleet.sources) {
      const opened = await source.open(services as never);
      closers.push(opened.close);
      tools.push(...opened.tools);
    }
    // The MCP client (the SDK, ajv and their 150-odd modules) is loaded only by a fleet that names a server.
    const mcp =
      fleet.mcpServers.length > 0
        ? await (
            await import('../tools/mcp/load-mcp-tools.js')
          ).loadMcpTools(fleet.mcpServers, services.logger)
        : { tools: [], close: async () => {} };
    closers.push(mcp.close);
    tools.push(...mcp.tools);
    const names = new Set<string>();
    for (const tool of tools) {
      if (names.has(tool.name)) {
        throw new ConfigError(
          'bad_fleet_config',
          `fleet configuration: tool "${tool.name}" is defined twice`,
        );
      }
      names.add(tool.name);
    }
    checkFleetTools(
      fleet.agents,
      names,
      fleet.mcpServers.map((server) => server.toolPrefix ?? server.name),
    );
    const ledger = effectLedgerOf(services);
    const intervalMs = services.env.EFFECT_SWEEP_INTERVAL_MS;
    if (intervalMs > 0) {
      const sweeper = startEffectSweeper({
        ledger,
        tools: sweptToolsOf(tools),
        logger: services.logger,
        intervalMs,
      });
      closers.push(() => sweeper.close());
    }
    services.logger.info(
      { agents: [...fleet.agents.keys()], tools: [...names] },
      'fleet configuration ready',
    );
    return {
      agents: fleet.agents,
      tools: new StaticToolProvider(tools.map((tool) => withEffectLedger(tool, ledger))),
      toolList: tools,
      close,
    };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** A tool with side effects gets `ctx.once` on the ledger; an effect nothing could settle is reported. */
function withEffectLedger(tool: Tool, ledger: EffectLedger): Tool {
  if (tool.readOnly === true) return tool;
  // A call that meets a young pending effect with a lookup waits out the grace: its time limit must outlast it.
  const grace = tool.effects?.lookup ? (tool.effects.pendingGraceMs ?? DEFAULT_PENDING_GRACE_MS) : undefined;
  return {
    ...tool,
    ...(tool.timeoutMs === undefined && grace !== undefined ? { timeoutMs: grace + 30_000 } : {}),
    async execute(args, ctx) {
      try {
        return await tool.execute(args, {
          ...ctx,
          once: (effect, options) =>
            runOnce(
              ledger,
              { callKey: ctx.callKey, jobId: ctx.runId, tool: tool.name, signal: ctx.signal },
              effect,
              onceOptionsOf(options),
              tool.effects,
            ),
        });
      } catch (error) {
        if (!(error instanceof EffectUncertainError)) throw error;
        return new UncertainOutcome(`${tool.name}: ${error.message}.`, {
          what: `${tool.name} effect ${error.effectKey}`,
          why: error.why,
        });
      }
    },
  };
}
