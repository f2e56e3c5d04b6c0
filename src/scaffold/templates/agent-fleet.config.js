// The fleet this service's workers serve: one agent and the one tool it calls. Serve it with
//   npx agent-fleet worker --config ./agent-fleet.config.js
// and add agents and tools here (docs/agents-and-tools.md of the agent-fleet package).
import { defineAgent, defineFleet, defineTool, z } from 'agent-fleet/kernel';

// A tool: what the model may call, its arguments as a zod schema, and what it returns as the observation.
export const shout = defineTool({
  name: 'shout',
  description: 'The text in capitals.',
  parameters: z.object({ text: z.string().min(1) }),
  readOnly: true, // no side effect: safe to call again after a retry
  execute: async ({ text }) => text.toUpperCase(),
});

// An agent: a task names it (`agent: 'greeter'`) and carries its `input`; the result carries its `output`.
export const greeter = defineAgent({
  name: 'greeter',
  description: 'Greets a person loudly.',
  input: z.object({ name: z.string().min(1) }),
  output: z.object({ greeting: z.string(), loud: z.boolean() }),
  instructions: (input) =>
    `Greet ${input.name}. Call shout with the name, then answer with what it returned.`,
  tools: [shout],
  budget: { maxSteps: 4 },
});

export default defineFleet({ agents: [greeter] });
