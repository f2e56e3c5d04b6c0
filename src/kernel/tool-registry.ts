// The tools a run may use, looked up by own property only (a model naming "constructor" or "__proto__"
// finds nothing), with their function definitions generated once from the zod schemas.
import { z } from 'zod';
import type { ToolSpec } from './messages.js';
import type { Tool } from './tool.js';

export class ToolRegistry {
  private readonly byName: Record<string, Tool>;
  /** Function definitions for the `tools` protocol; one array, so token counts of it are cached. */
  readonly specs: readonly ToolSpec[];
  private promptText: string | undefined;

  constructor(tools: readonly Tool[]) {
    this.byName = Object.create(null) as Record<string, Tool>;
    for (const tool of tools) {
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) throw new Error(`Invalid tool name "${tool.name}"`);
      if (Object.hasOwn(this.byName, tool.name)) throw new Error(`Duplicate tool name "${tool.name}"`);
      this.byName[tool.name] = tool;
    }
    this.specs = tools.map(toSpec);
  }

  get(name: string): Tool | undefined {
    return Object.hasOwn(this.byName, name) ? this.byName[name] : undefined;
  }

  get names(): string[] {
    return Object.keys(this.byName);
  }

  /** These tools and a run's own (its `recall_notes`); a name already here is refused. */
  with(...tools: Tool[]): ToolRegistry {
    return new ToolRegistry([...Object.values(this.byName), ...tools]);
  }

  /** A subset, for a task that names the tools it may use. */
  pick(names: readonly string[]): ToolRegistry {
    return new ToolRegistry(names.map((name) => this.get(name)).filter((tool) => tool !== undefined));
  }

  /** The tool list for the JSON-in-text protocol's system prompt: one line per tool, schemas compact. */
  describeForPrompt(): string {
    this.promptText ??= this.specs
      .map(
        (spec) =>
          `- ${spec.function.name}(${compactParams(spec.function.parameters)}): ${spec.function.description}`,
      )
      .join('\n');
    return this.promptText;
  }
}

/**
 * A tool's parameters as the model is shown them (and the catalog publishes them): its own JSON Schema when it
 * has one (an MCP server's), else the one of its zod schema.
 */
export function toolParametersJsonSchema(tool: Tool): Record<string, unknown> {
  const schema = tool.inputJsonSchema
    ? { ...tool.inputJsonSchema }
    : (z.toJSONSchema(tool.parameters, { target: 'draft-7', io: 'input' }) as Record<string, unknown>);
  delete schema.$schema;
  return schema;
}

function toSpec(tool: Tool): ToolSpec {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: toolParametersJsonSchema(tool) },
  };
}

/** `{"sql": "string"}`-like rendering of a JSON schema's properties, cheaper in tokens than the schema. */
function compactParams(schema: Record<string, unknown>): string {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties)
    .map(([key, prop]) => `${key}${required.has(key) ? '' : '?'}: ${String(prop.type ?? 'any')}`)
    .join(', ');
}
