// A task checked against the catalog the workers publish: the same refusals the worker makes (unknown agent,
// a tool the agent lacks, an input its schema refuses, a budget above its ceiling), made before enqueue.
import { z } from 'zod';
import { safeParse, toFieldIssues, type AgentTask, type FieldIssue } from '../queue/task-schema.js';
import type { Catalog, CatalogAgent } from './catalog.js';
import { DEFAULT_AGENT } from '../kernel/define-agent.js';

const inputSchemas = new WeakMap<CatalogAgent, z.ZodType | null>();

export function checkTaskAgainstCatalog(task: AgentTask, catalog: Catalog): FieldIssue[] {
  const name = task.agent ?? DEFAULT_AGENT;
  const agent = catalog.agents.find((a) => a.name === name);
  if (!agent) {
    const known = catalog.agents.map((a) => a.name).join(', ');
    return [{ path: 'agent', message: `this fleet has no agent "${name}" (it has ${known})` }];
  }
  const issues: FieldIssue[] = [];
  const tools = new Set(agent.tools.map((t) => t.name));
  task.tools?.forEach((tool, i) => {
    if (!tools.has(tool))
      issues.push({ path: `tools.${i}`, message: `agent "${name}" has no tool "${tool}"` });
  });
  for (const [field, ceiling] of Object.entries(agent.budgetCeiling)) {
    const asked = task.budget?.[field as keyof NonNullable<AgentTask['budget']>];
    if (asked !== undefined && ceiling !== undefined && asked > ceiling) {
      issues.push({
        path: `budget.${field}`,
        message: `must be at most ${ceiling} (agent "${name}"'s budgetCeiling)`,
      });
    }
  }
  issues.push(...checkInput(task, agent));
  return issues;
}

function checkInput(task: AgentTask, agent: CatalogAgent): FieldIssue[] {
  if (agent.input === null) {
    if (task.input !== undefined) return [{ path: 'input', message: `agent "${agent.name}" takes no input` }];
    if (task.task === undefined)
      return [{ path: 'task', message: `required: agent "${agent.name}" takes no input, only task text` }];
    return [];
  }
  if (task.input === undefined) return [{ path: 'input', message: `required by agent "${agent.name}"` }];
  const schema = inputSchemaOf(agent);
  if (!schema) return [];
  const parsed = safeParse(schema, task.input);
  if (parsed.success) return [];
  return toFieldIssues(parsed.error.issues).map((issue) => ({
    path: issue.path ? `input.${issue.path}` : 'input',
    message: issue.message,
  }));
}

/** The agent's input schema back as zod, once per catalog; one zod cannot read is left to the worker to check. */
function inputSchemaOf(agent: CatalogAgent): z.ZodType | null {
  let schema = inputSchemas.get(agent);
  if (schema === undefined) {
    try {
      schema = z.fromJSONSchema(agent.input as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      schema = null;
    }
    inputSchemas.set(agent, schema);
  }
  return schema;
}
