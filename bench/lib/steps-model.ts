// The scripted model's behaviour in the benchmark: tasks say how many steps they take ("bench <name>: <n>
// steps"); the model makes n-1 tool calls, each with a new `page` (so the loop detector never fires), then
// answers. It reads where a run is from its own turns, as a trained model does (the largest page it already asked
// for, in its calls or in its own summary of folded turns), never from text written about them, so any worker can
// serve any request and a memory that drops the model's turns makes it repeat itself.
import type { ChatMessage } from '../../src/kernel/messages.js';
import type { RecordedRequest, ScriptedReply } from '../../src/testing/scripted-model-server.js';

/** A tool no worker wires, so a step costs the loop and not a database; BENCH_TOOL names a real one instead. */
export const DEFAULT_BENCH_TOOL = 'bench_lookup';

export const taskText = (name: string, steps: number): string => `bench ${name}: ${steps} steps`;

const PAGE = /page(?:\\?"\s*:|=)\s*(\d+)/g;

function lastPage(messages: readonly ChatMessage[]): number {
  let last = 0;
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    const texts = [message.content ?? ''];
    for (const call of message.tool_calls ?? []) texts.push(call.function.arguments);
    for (const text of texts)
      for (const match of text.matchAll(PAGE)) last = Math.max(last, Number(match[1]));
  }
  return last;
}

export function benchStepsModel(tool: string): (request: RecordedRequest) => ScriptedReply {
  return (request) => {
    const task = String(request.messages[1]?.content ?? '');
    const match = /^bench (\S+): (\d+) steps/.exec(task);
    if (!match) return { answer: 'no plan' };
    const step = lastPage(request.messages.slice(2)) + 1;
    if (step < Number(match[2])) return { actions: [{ tool, args: { page: step } }] };
    return { answer: `${match[1]} done in ${match[2]} steps` };
  };
}
