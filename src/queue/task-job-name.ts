// The name of a task's job on agent-tasks, so a list of jobs (Bull Board, `getJobs`) tells them apart: the
// agent's name and the first words of the task, e.g. `default: Find the top 3 customers by Q1…`. Workers never
// look at it (any name is processed alike); credentials in the task's words are masked, as everywhere it is shown.
import { scrubText } from '../logging/redact.js';
import type { AgentTask } from './task-schema.js';

/** Words of the task kept in the name, and the name's length at most. */
const WORDS = 8;
export const TASK_JOB_NAME_MAX_CHARS = 80;

export function taskJobName(task: Pick<AgentTask, 'agent' | 'task'>): string {
  const agent = task.agent ?? 'default';
  const words = scrubText(task.task ?? '')
    // One line of visible text: controls and runs of whitespace become one space.
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]+/gu, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  if (words.length === 0) return agent;
  let text = words.slice(0, WORDS).join(' ');
  const room = TASK_JOB_NAME_MAX_CHARS - agent.length - 2;
  const cut = words.length > WORDS || [...text].length > room;
  if ([...text].length > room - 1) text = [...text].slice(0, Math.max(0, room - 1)).join('');
  return `${agent}: ${text}${cut ? '…' : ''}`;
}
