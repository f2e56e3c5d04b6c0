// The catalog a worker serves: its agents with their tools, input and output JSON Schemas and budget limits,
// plain JSON with a content hash. Workers publish it; producers check a task against it before enqueuing.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AgentDefinition } from '../kernel/define-agent.js';
import { toJsonSchema, toolNamesOf } from '../kernel/define-fleet.js';
import type { Budget } from '../kernel/budget.js';
import { toolParametersJsonSchema } from '../kernel/tool-registry.js';
import type { Tool } from '../kernel/tool.js';

export interface CatalogTool {
  name: string;
  description: string;
  readOnly: boolean;
  parameters: Record<string, unknown>;
}

export interface CatalogAgent {
  name: string;
  description: string;
  tools: CatalogTool[];
  input: Record<string, unknown> | null;
  output: Record<string, unknown> | null;
  model: string | null;
  protocol: string | null;
  budget: Partial<Budget>;
  budgetCeiling: Partial<Budget>;
}

export interface Catalog {
  /** sha256 of the agents' JSON: two workers with the same hash serve the same catalog. */
  hash: string;
  agents: CatalogAgent[];
}

export function buildCatalog(agents: Iterable<AgentDefinition>, tools: readonly Tool[]): Catalog {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const entries = [...agents].map((agent): CatalogAgent => ({
    name: agent.name,
    description: agent.description,
    tools: toolNamesOf(agent).map((name) => {
      const tool = byName.get(name);
      return {
        name,
        description: tool?.description ?? '',
        readOnly: tool?.readOnly === true,
        // As the model sees them: an MCP tool's schema is the server's, not its zod translation's.
        parameters: tool ? toolParametersJsonSchema(tool) : {},
      };
    }),
    input: agent.input ? withoutDialect(toJsonSchema(agent.input, `agent "${agent.name}" input`)) : null,
    output: agent.output ? withoutDialect(toJsonSchema(agent.output, `agent "${agent.name}" output`)) : null,
    model: agent.model ?? null,
    protocol: agent.protocol ?? null,
    budget: agent.budget ?? {},
    budgetCeiling: agent.budgetCeiling ?? {},
  }));
  const hash = createHash('sha256').update(JSON.stringify(entries)).digest('hex');
  return { hash, agents: entries };
}

function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...schema };
  delete copy['$schema'];
  return copy;
}

/** A catalog read back from Redis, checked: a malformed one is treated as absent. */
export const catalogSchema: z.ZodType<Catalog> = z.object({
  hash: z.string(),
  agents: z.array(
    z.object({
      name: z.string(),
      description: z.string(),
      tools: z.array(
        z.object({
          name: z.string(),
          description: z.string(),
          readOnly: z.boolean(),
          parameters: z.record(z.string(), z.unknown()),
        }),
      ),
      input: z.record(z.string(), z.unknown()).nullable(),
      output: z.record(z.string(), z.unknown()).nullable(),
      model: z.string().nullable(),
      protocol: z.string().nullable(),
      budget: z.record(z.string(), z.number()),
      budgetCeiling: z.record(z.string(), z.number()),
    }),
  ),
});
