// The scripted model of the children scenario (bench/scenarios/children.ts). A parent's task reads
// `children <name>: <k> calls of <bench_child|bench_fact>`: its first turn makes k calls of that tool at once
// (each with `task: "fact <name>-<i>"`), its second answers with what they returned. A child's task is
// `fact <name>-<i>`: it answers at once with `childAnswer(task)`, the very text the in-process tool `bench_fact`
// returns, so both ways the parent reads the same results.
import type { RecordedRequest, ScriptedReply } from '../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../src/testing/transcript.js';

export const CHILDREN_MODEL = 'children';
export type ChildMode = 'bench_child' | 'bench_fact';

export const childrenTaskText = (name: string, calls: number, mode: ChildMode): string =>
  `children ${name}: ${calls} calls of ${mode}`;

export const childAnswer = (task: string): string => `${task}: 42 units, +4% on last quarter`;

export function childrenModel(request: RecordedRequest): ScriptedReply {
  const task = String(request.messages[1]?.content ?? '');
  const fact = /^fact \S+/.exec(task);
  if (fact) return { answer: childAnswer(fact[0]) };
  const parent = /^children (\S+): (\d+) calls of (bench_child|bench_fact)/.exec(task);
  if (!parent) return { answer: 'no plan' };
  if (turnsIn(request.messages) === 0) {
    return {
      actions: Array.from({ length: Number(parent[2]) }, (_, i) => ({
        tool: parent[3]!,
        args: { task: `fact ${parent[1]}-${i}` },
      })),
    };
  }
  const results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  return { answer: `${parent[1]}: ${results.join(' | ')}` };
}
