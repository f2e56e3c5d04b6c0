// A run's timeline (src/console/timeline.ts) as plain text for a terminal: `npm run trace -- --job ID`.
// Every line goes through terminalSafe's rules for control characters, so a hostile answer or observation
// cannot move the cursor or recolour the terminal; multi-line texts keep their lines, indented.
import { formatInt, formatTime, formatUsd } from '../reports/text.js';
import { stepsDeletedText, type Timeline, type TimelineEntry, type TimelineUsage } from './timeline.js';

// C0 and C1 controls but tab and newline, DEL, and the bidirectional overrides.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
const clean = (text: string): string => text.replace(CONTROLS, '\uFFFD').replace(/\t/g, '  ');

/** Each line of `text`, indented. */
function block(text: string, indent = '      '): string {
  return clean(text)
    .split(/\r?\n/)
    .map((line) => `${indent}${line}`.trimEnd())
    .join('\n');
}

export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1_000)} s`;
}

/** "2,700 prompt (1,024 cached) + 450 completion (128 reasoning) tokens": the parts shown when non-zero. */
export function describeTokens(
  usage: Pick<TimelineUsage, 'promptTokens' | 'completionTokens' | 'cachedPromptTokens' | 'reasoningTokens'>,
): string {
  const cached = usage.cachedPromptTokens > 0 ? ` (${formatInt(usage.cachedPromptTokens)} cached)` : '';
  const reasoning = usage.reasoningTokens > 0 ? ` (${formatInt(usage.reasoningTokens)} reasoning)` : '';
  return `${formatInt(usage.promptTokens)} prompt${cached} + ${formatInt(usage.completionTokens)} completion${reasoning} tokens`;
}

/** What a clearing of earlier results took out of the prompt, in a line. */
export function clearedText(entry: TimelineEntry & { type: 'clear' }): string {
  return `memory · ${entry.results} earlier result(s) cleared to save context (${entry.tokens} tokens, from ${entry.tools.join(', ')}); their calls stay`;
}

/** What a fold's summary cost, when the model wrote it (or was asked to). */
export function foldCost(entry: TimelineEntry & { type: 'fold' }): string {
  if (entry.modelCalls === 0) return '';
  const by = entry.byModel ? 'written by the model' : 'the model was asked but failed';
  const requests = `${entry.modelCalls} request${entry.modelCalls === 1 ? '' : 's'}`;
  return ` (${by}: ${requests} · ${formatInt(entry.promptTokens)} prompt + ${formatInt(entry.completionTokens)} completion tokens · ${formatUsd(entry.costUsd)})`;
}

export interface TimelineTextOptions {
  /** Lines printed right after an entry's (render-trace-tree.ts: the run a call of a child agent started). */
  afterEntry?: (entry: TimelineEntry) => string[];
}

export function renderTimelineText(timeline: Timeline, options: TimelineTextOptions = {}): string {
  const { run } = timeline;
  const lines: string[] = [];
  lines.push(
    `run ${clean(run.jobId)} · agent ${clean(run.agent)}${run.tenant ? ` · tenant ${clean(run.tenant)}` : ''} · ${run.status}${run.stopReason ? ` (${run.stopReason})` : ''}`,
  );
  lines.push(`task: ${clean(run.task).replace(/\s+/g, ' ')}`);
  const batch = run.batchId ? ` · batch ${clean(run.batchId)}` : '';
  lines.push(
    `model ${clean(run.model)} · protocol ${run.protocol}${batch} · attempts ${run.attempts} · started ${formatTime(run.startedAt)}` +
      (run.durationMs === null ? ' · still running' : ` · took ${formatDuration(run.durationMs)}`),
  );
  const estimated = run.usage.estimated ? ' (estimated: the endpoint reported no usage for some call)' : '';
  lines.push(
    `${run.steps} steps · ${run.toolCalls} tool calls · ${describeTokens(run.usage)} · ${formatUsd(run.usage.costUsd)}${estimated}`,
  );
  if (run.stopDetail) lines.push(`why it stopped: ${clean(run.stopDetail)}`);
  lines.push(...treeLines(timeline.tree));
  if (run.error)
    lines.push(`error: ${clean(run.error.kind)}/${clean(run.error.code)}: ${clean(run.error.message)}`);
  lines.push('', 'timeline:');
  if (run.stepsDeleted) lines.push(`  ${stepsDeletedText(run.stepsDeleted)}`);
  for (const entry of timeline.entries) lines.push(entryText(entry), ...(options.afterEntry?.(entry) ?? []));
  if (run.answer !== null) lines.push('', 'answer:', block(run.answer, '  '));
  if ('output' in run) lines.push('', 'output:', block(JSON.stringify(run.output, null, 2), '  '));
  return `${lines.join('\n')}\n`;
}

/** The run's place among agents that call agents: the job that called it, those it called (one level). */
function treeLines(tree: Timeline['tree']): string[] {
  const lines: string[] = [];
  if (tree.parentJobId) lines.push(`called by job ${clean(tree.parentJobId)} (npm run trace -- --job it)`);
  if (tree.children.length === 0) return lines;
  lines.push(`agents it called (${tree.children.length}; each is a run: npm run trace -- --job ID):`);
  for (const child of tree.children) {
    const stop = child.stopReason ? ` (${child.stopReason})` : '';
    lines.push(
      `  ${clean(child.jobId)} · agent ${clean(child.agent)} · ${child.status}${stop} · ${formatInt(child.totalTokens)} tokens · ${formatUsd(child.costUsd)}`,
    );
  }
  return lines;
}

function entryText(entry: TimelineEntry): string {
  const at = (step: number | null) => (step === null ? '  end ' : `  ${String(step).padStart(3)} `);
  switch (entry.type) {
    case 'model_call': {
      const latency = entry.latencyMs ?? entry.stepLatencyMs;
      const retries =
        entry.retries > 0 ? ` · ${entry.retries} ${entry.retries === 1 ? 'retry' : 'retries'}` : '';
      const calls = entry.calls === 1 ? '' : ` · ${entry.calls} requests`;
      const error = entry.error ? ` · ${clean(entry.error)}` : '';
      return `${at(entry.step)}model (${entry.kind}) · ${describeTokens(entry)} · ${formatUsd(entry.costUsd)} · ${formatDuration(latency)}${calls}${retries}${error}`;
    }
    case 'tool_call': {
      const outcome = entry.ok ? 'ok' : `failed: ${clean(entry.errorCode ?? 'error')}`;
      const head = `${at(entry.step)}tool ${clean(entry.tool)} #${entry.index} · ${outcome} · ${formatDuration(entry.latencyMs)}`;
      const detail =
        entry.detail.kind === 'sql'
          ? block(entry.detail.sql)
          : entry.detail.kind === 'email'
            ? block(`to: ${entry.detail.to}\nsubject: ${entry.detail.subject}\n\n${entry.detail.body}`)
            : block(JSON.stringify(entry.args));
      const observation =
        entry.observation === null ? '' : `\n      → observation:\n${block(entry.observation, '        ')}`;
      return `${head}\n${detail}${observation}`;
    }
    case 'fold':
      return `${at(entry.step)}memory fold · ${entry.messages} messages into the summary${foldCost(entry)}\n${block(entry.summary)}`;
    case 'clear':
      return `${at(entry.step)}${clearedText(entry)}`;
    case 'decision':
      return `${at(entry.step)}decision · ${clean(entry.text)}`;
    case 'recall': {
      const notes = entry.notes.map((note) => `${note.id}: ${note.text}`).join('; ');
      return `${at(entry.step)}decision · ${clean(`recalled notes (by the fleet): ${notes}`)}`;
    }
    case 'feedback':
      return `${at(entry.step)}invalid reply · told the model:\n${block(entry.text)}`;
    case 'answer':
      return `${at(entry.step)}${entry.final ? 'final answer' : 'answer'} (below)`;
  }
}
