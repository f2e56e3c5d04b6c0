// The worker asks for the tools a task names; what stands behind them (a data database, an SMTP server) is
// wired once per process at start.
import { ToolRegistry } from '../kernel/tool-registry.js';
import type { Tool } from '../kernel/tool.js';

export interface ToolProvider {
  registryFor(names: readonly string[]): ToolRegistry;
}

/** Tools shared by every job of the process; a task gets the subset it names. */
export class StaticToolProvider implements ToolProvider {
  private readonly all: ToolRegistry;
  // Tasks name few distinct sets (most name none, so all tools): one registry per set, reused by every job, so
  // its JSON schemas are generated once and its `specs` array keeps the identity its token count is cached by.
  // Names are the agents' (validated against them), so the map stays small.
  private readonly picked = new Map<string, ToolRegistry>();

  constructor(tools: readonly Tool[]) {
    this.all = new ToolRegistry(tools);
  }

  registryFor(names: readonly string[]): ToolRegistry {
    const key = names.join(',');
    let registry = this.picked.get(key);
    if (!registry) {
      registry = this.all.pick(names);
      this.picked.set(key, registry);
    }
    return registry;
  }
}
