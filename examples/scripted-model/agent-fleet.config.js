// A service's own fleet in plain JavaScript, from the installed package: two agents, each with a tool of its
// own. `greeter` shouts a name and answers a typed object; `order-status` looks an order up and answers text.
import { defineAgent, defineFleet, defineTool, z } from 'agent-fleet/kernel';

const ORDERS = { 'A-17': 'shipped on 2 June', 'B-40': 'waiting for payment' };

const shout = defineTool({
  name: 'shout',
  description: 'The text in capitals.',
  parameters: z.object({ text: z.string().min(1) }),
  readOnly: true,
  execute: async ({ text }) => text.toUpperCase(),
});

const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'The status of an order, by its id.',
  parameters: z.object({ orderId: z.string().min(1) }),
  readOnly: true,
  execute: async ({ orderId }) => ORDERS[orderId] ?? 'no such order',
});

export const greeter = defineAgent({
  name: 'greeter',
  description: 'Greets a person loudly.',
  input: z.object({ name: z.string().min(1) }),
  output: z.object({ greeting: z.string(), loud: z.boolean() }),
  instructions: (input) => `Greet ${input.name}.`,
  tools: [shout],
  budget: { maxSteps: 4 },
});

export const orderStatus = defineAgent({
  name: 'order-status',
  description: "Says where a customer's order is.",
  input: z.object({ orderId: z.string().min(1) }),
  instructions: 'Look the order up and say in one sentence where it is.',
  tools: [lookupOrder],
  budget: { maxSteps: 4 },
});

export default defineFleet({ agents: [greeter, orderStatus] });
