// The fleet of the children scenario (bench/scenarios/children.ts): one parent agent offered both a child agent
// (`bench_child`, a task job of its own) and an in-process read-only tool (`bench_fact`) that returns the very text
// the child answers, so the two ways of doing the same work differ only in how the call runs.
import { z } from 'zod';
import { defineAgent, defineFleet, defineTool } from '../../src/kernel.js';
import { childAnswer } from '../lib/children-model.js';

const benchFact = defineTool({
  name: 'bench_fact',
  description: 'The fact about one item, in one line.',
  parameters: z.object({ task: z.string() }),
  readOnly: true,
  execute: async ({ task }) => childAnswer(task),
});

const benchChild = defineAgent({
  name: 'bench-child',
  description: 'Answers the fact about one item, in one line.',
  // Never called (the child answers at once), but a request without tools reads as the JSON protocol to the
  // scripted model, which would then answer in JSON.
  tools: [benchFact],
});

const benchParent = defineAgent({
  name: 'bench-parent',
  description: 'Asks for facts, then answers with them.',
  tools: [benchFact],
  agents: [benchChild],
});

export default defineFleet({ agents: [benchParent] });
