// Email tasks for the fault suite. A task says how many emails it sends: "email job <name>: <n> emails". The
// model sends them one per step (a distinct subject and recipient each), then answers; it reads where it is
// from the conversation, so any worker can serve any request of any job, also after a resume.
import { turnsIn } from '../../src/testing/transcript.js';
import type { CapturedMessage } from '../../src/demo/smtp-sink.js';
import type { RecordedRequest, ScriptedReply } from '../../src/testing/scripted-model-server.js';

const EMAIL_TASK = /^email job (\S+): (\d+) emails/;

export interface EmailTask {
  name: string;
  emails: number;
  task: string;
}

export function emailTask(name: string, emails: number): EmailTask {
  return { name, emails, task: `email job ${name}: ${emails} emails` };
}

export const emailSubject = (name: string, index: number): string => `fault suite ${name} email ${index}`;

/** The task a request of an email job belongs to, or undefined for other requests. */
export function emailTaskOf(request: RecordedRequest): { name: string; emails: number } | undefined {
  const match = EMAIL_TASK.exec(String(request.messages[1]?.content ?? ''));
  return match ? { name: match[1]!, emails: Number(match[2]) } : undefined;
}

/** The step a request asks for: one more than the assistant turns it carries. */
export const emailStepOf = (request: RecordedRequest): number => turnsIn(request.messages) + 1;

export function emailTasksModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = emailTaskOf(request);
  if (!task) return undefined;
  const step = emailStepOf(request);
  if (step > task.emails) return { answer: `${task.name}: ${task.emails} emails sent` };
  return {
    actions: [
      {
        tool: 'send_email',
        args: {
          to: `${task.name}.${step}@example.com`,
          subject: emailSubject(task.name, step),
          body: `Email ${step} of ${task.emails} for ${task.name}.\n`,
        },
      },
    ],
  };
}

/** How often each expected subject arrived, and the subjects that arrived but were not expected. */
export function emailCounts(
  tasks: readonly EmailTask[],
  messages: readonly CapturedMessage[],
): { missing: string[]; repeated: string[]; unexpected: string[]; received: number } {
  const expected = new Set(
    tasks.flatMap((t) => Array.from({ length: t.emails }, (_, i) => emailSubject(t.name, i + 1))),
  );
  const seen = new Map<string, number>();
  for (const message of messages) seen.set(message.subject, (seen.get(message.subject) ?? 0) + 1);
  return {
    missing: [...expected].filter((subject) => !seen.has(subject)),
    repeated: [...seen].filter(([, n]) => n > 1).map(([subject]) => subject),
    unexpected: [...seen.keys()].filter((subject) => !expected.has(subject)),
    received: messages.length,
  };
}

/** Model calls beyond one per step of the final trajectory, per task name. */
export function repeatedCalls(
  requests: readonly RecordedRequest[],
  stepsByName: ReadonlyMap<string, number>,
): Map<string, number> {
  const calls = new Map<string, number>();
  for (const request of requests) {
    const task = emailTaskOf(request);
    if (task) calls.set(task.name, (calls.get(task.name) ?? 0) + 1);
  }
  const repeated = new Map<string, number>();
  for (const [name, steps] of stepsByName) repeated.set(name, (calls.get(name) ?? 0) - steps);
  return repeated;
}
