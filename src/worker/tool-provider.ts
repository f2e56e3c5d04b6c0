// The worker asks for the tools a task names; what stands behind them (a data database, an SMTP server) is
// wired once per process at start.
import { ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/tool.js';
import type { ToolName } from '../queue/tool-names.js';

export interface ToolProvider {
  registryFor(names: readonly ToolName[]): ToolRegistry;
}

/** Tools shared by every job of the process; a task gets the subset it names. */
export class StaticToolProvider implements ToolProvider {
  private readonly all: ToolRegistry;
  constructor(tools: readonly Tool[]) {
    this.all = new ToolRegistry(tools);
  }

  registryFor(names: readonly ToolName[]): ToolRegistry {
    return this.all.pick(names);
  }
}
