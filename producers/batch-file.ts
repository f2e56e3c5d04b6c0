// A batch file: one task per line, JSON. Every line is checked before anything is enqueued,
// and every error names its line and field, so a 500-line file is fixed in one pass.
import { MAX_BATCH_TASKS } from '../src/batch/batch-schema.js';
import { scanJsonText, TASK_JSON_LIMITS } from '../src/queue/json-structure.js';
import { formatFieldIssues, validateTask, type AgentTask } from '../src/queue/task-schema.js';

export type BatchFileParse = { ok: true; tasks: AgentTask[] } | { ok: false; errors: string[] };

/** At most this many errors are listed: past that, the file is probably not a task file at all. */
const MAX_ERRORS = 20;

export function parseBatchFile(text: string): BatchFileParse {
  const tasks: AgentTask[] = [];
  const errors: string[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    if (line.trim() === '' || errors.length >= MAX_ERRORS || tasks.length > MAX_BATCH_TASKS) return;
    const where = `line ${index + 1}`;
    // Counted on the text first: a line of a million keys is refused before JSON.parse builds it.
    const shape = scanJsonText(Buffer.from(line, 'utf8'), TASK_JSON_LIMITS);
    if (shape) {
      errors.push(`${where}: the task ${shape.message}`);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      errors.push(`${where}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
      return;
    }
    const validation = validateTask(value);
    if (validation.ok) tasks.push(validation.task);
    else errors.push(`${where}: ${formatFieldIssues(validation.issues)}`);
  });
  if (errors.length === 0 && tasks.length === 0) errors.push('the file holds no task');
  if (tasks.length > MAX_BATCH_TASKS) errors.push(`the file holds more than ${MAX_BATCH_TASKS} tasks`);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, tasks };
}
