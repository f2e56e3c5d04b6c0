// A scripted model for fleet tests. Tasks say how long they take: "job <name>: <n> steps". The model makes
// n-1 tool calls (each a new one, so no loop detection), then answers; it reads where it is from the
// conversation, so any worker can serve any request of any job.
import { turnsIn } from '../../src/testing/transcript.js';
import type {
  RecordedRequest,
  ScriptedModelServer,
  ScriptedReply,
} from '../../src/testing/scripted-model-server.js';

/** The step a request asks for: the turns in the window plus the ones folded into the summary, plus one. */
export function stepOf(request: RecordedRequest): number {
  const done = turnsIn(request.messages);
  const summary = String(request.messages[2]?.content ?? '');
  const folded = (summary.match(/I called list_tables/g) ?? []).length;
  return done + folded + 1;
}

export function stepsModel(request: RecordedRequest): ScriptedReply {
  const task = String(request.messages[1]?.content ?? '');
  const match = /job (\S+): (\d+) steps/.exec(task);
  if (!match) return { answer: 'no plan' };
  const step = stepOf(request);
  if (step < Number(match[2])) return { actions: [{ tool: 'list_tables', args: { page: step } }] };
  return { answer: `${match[1]} done in ${match[2]} steps` };
}

/** The requests the model got for one job of stepsModel. */
export const requestsFor = (server: ScriptedModelServer, name: string): RecordedRequest[] =>
  server.requests.filter((r) => String(r.messages[1]?.content).startsWith(`job ${name}:`));
