// The model of the tests: one rule per agent, each deciding from the transcript of the request it is given (the
// agent's instructions, the task's input, what the tools returned), so any number of tasks can run at once.
import { observationsIn, startScriptedModel } from 'agent-fleet/testing';

/** The task's input, as the worker writes it in the user message: `Input: {...}`. */
function inputOf(request) {
  const json = /Input: (\{.*\})\s*$/s.exec(String(request.messages[1]?.content ?? ''))?.[1];
  return json === undefined ? undefined : JSON.parse(json);
}

/** greeter: call `shout` with the name, then answer the typed output with what it returned. */
export function greeterRule(request) {
  if (!String(request.messages[0]?.content ?? '').startsWith('Greet ')) return undefined;
  const [shouted] = observationsIn(request.messages);
  if (shouted === undefined) return { actions: [{ tool: 'shout', args: { text: inputOf(request).name } }] };
  return { output: { greeting: `HELLO ${shouted.trim()}`, loud: true } };
}

/** order-status: look the order up, then answer in words. */
export function orderStatusRule(request) {
  if (!String(request.messages[0]?.content ?? '').startsWith('Look the order up')) return undefined;
  const { orderId } = inputOf(request);
  const [status] = observationsIn(request.messages);
  if (status === undefined) return { actions: [{ tool: 'lookup_order', args: { orderId } }] };
  return { answer: `Order ${orderId}: ${status.trim()}.` };
}

export function startModel(options = {}) {
  return startScriptedModel({ rules: [greeterRule, orderStatusRule], ...options });
}
