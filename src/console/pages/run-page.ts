// A run's page: its figures, its approvals, the answer rendered as (sanitized) Markdown, the structured output,
// and the timeline (src/console/timeline.ts) entry by entry.
import type { Approval } from '../../approvals/approval.js';
import { TASKS_QUEUE } from '../../queue/names.js';
import { formatInt, formatTime, formatUsd } from '../../reports/text.js';
import { clearedText, describeTokens, foldCost, formatDuration } from '../render-timeline-text.js';
import { renderSafeMarkdown } from '../safe-markdown.js';
import { stepsDeletedText, type Timeline, type TimelineEntry } from '../timeline.js';
import { badge, boardJobHref, cards, h, href, NONE, page, type Nav } from './layout.js';
import { runApprovalsSection } from './run-approvals.js';

const json = (value: unknown): string => h(JSON.stringify(value, null, 2) ?? 'undefined');

function stepLabel(step: number | null): string {
  return `<span class="step">${step === null ? 'end' : `step ${step}`}</span>`;
}

function entryHtml(entry: TimelineEntry): string {
  switch (entry.type) {
    case 'model_call': {
      const facts = [
        describeTokens(entry),
        formatUsd(entry.costUsd),
        entry.latencyMs === null
          ? `step ${formatDuration(entry.stepLatencyMs)}`
          : formatDuration(entry.latencyMs),
        `${entry.calls} request${entry.calls === 1 ? '' : 's'}`,
        `${entry.retries} ${entry.retries === 1 ? 'retry' : 'retries'}`,
      ];
      const error = entry.error ? `<div class="error">${h(entry.error)}</div>` : '';
      return `<li class="model"><div class="entry-head">${stepLabel(entry.step)}model call · ${h(entry.kind)}</div>
<div class="facts">${facts.map(h).join(' · ')}</div>${error}</li>`;
    }
    case 'tool_call': {
      const outcome = entry.ok ? 'ok' : `failed: ${entry.errorCode ?? 'error'}`;
      let detail: string;
      if (entry.detail.kind === 'sql')
        detail = `<div class="label">SQL</div><pre class="sql">${h(entry.detail.sql)}</pre>`;
      else if (entry.detail.kind === 'email') {
        detail = `<dl class="email"><dt>To</dt><dd class="to">${h(entry.detail.to)}</dd><dt>Subject</dt><dd class="subject">${h(entry.detail.subject)}</dd></dl>
<pre class="body">${h(entry.detail.body)}</pre>`;
      } else detail = `<div class="label">Arguments</div><pre>${json(entry.args)}</pre>`;
      const observation =
        entry.observation === null
          ? ''
          : `<div class="label">Observation (as the model saw it)</div><pre class="observation">${h(entry.observation)}</pre>`;
      return `<li class="tool ${entry.ok ? 'ok' : 'failed'}" data-tool="${h(entry.tool)}"><div class="entry-head">${stepLabel(entry.step)}${h(entry.tool)} #${entry.index} · <span class="${entry.ok ? '' : 'error'}">${h(outcome)}</span> · ${h(formatDuration(entry.latencyMs))}</div>
${detail}${observation}</li>`;
    }
    case 'fold':
      return `<li class="fold"><div class="entry-head">${stepLabel(entry.step)}memory fold · ${entry.messages} messages into the summary${h(foldCost(entry))}</div>
<pre>${h(entry.summary)}</pre></li>`;
    case 'clear':
      return `<li class="fold"><div class="entry-head">${stepLabel(entry.step)}${h(clearedText(entry))}</div></li>`;
    case 'decision':
      return `<li class="decision"><div class="entry-head">${stepLabel(entry.step)}budget decision</div><div>${h(entry.text)}</div></li>`;
    case 'recall': {
      // One item per note: its id to look it up (npm run memory, /v1/notes), its text as the data it is.
      const notes = entry.notes
        .map(
          (note) =>
            `<li><code class="note-id">${h(note.id)}</code><pre class="note-text">${h(note.text)}</pre></li>`,
        )
        .join('');
      return `<li class="decision recall"><div class="entry-head">${stepLabel(entry.step)}recalled notes (by the fleet, not the model): ${entry.notes.length}</div>
<div class="meta">looked up for: ${h(entry.query)}</div><ul class="notes">${notes}</ul></li>`;
    }
    case 'feedback':
      return `<li class="feedback"><div class="entry-head">${stepLabel(entry.step)}invalid reply: the model was told</div><pre>${h(entry.text)}</pre></li>`;
    case 'answer':
      return `<li class="answer"><div class="entry-head">${stepLabel(entry.step)}${entry.final ? 'final answer (tool-less last turn)' : 'answer'}: shown above</div></li>`;
  }
}

/** The run's place among agents that call agents, with links both ways; nothing for a run outside a tree. */
function treeSection(tree: Timeline['tree']): string {
  const parent = tree.parentJobId
    ? `<p class="meta">called by the agent of run <a href="${href('runs', tree.parentJobId)}">${h(tree.parentJobId)}</a></p>`
    : '';
  if (tree.children.length === 0) return parent;
  const rows = tree.children
    .map(
      (child) =>
        `<tr><td><a href="${href('runs', child.jobId)}">${h(child.jobId)}</a></td><td>${h(child.agent)}</td><td>${badge(child.status)}${child.stopReason ? ` <span class="meta">${h(child.stopReason)}</span>` : ''}</td><td>${formatInt(child.totalTokens)}</td><td>${formatUsd(child.costUsd)}</td></tr>`,
    )
    .join('');
  return `${parent}<h2>Agents it called</h2>
<p class="meta">Each is a run of its own; this run's figures above cover them all.</p>
<table class="children"><thead><tr><th>run</th><th>agent</th><th>status</th><th>tokens</th><th>cost</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** Said first in a swept run's timeline: its steps were deleted, not never recorded. */
function stepsDeletedItem(timeline: Timeline): string {
  const deleted = timeline.run.stepsDeleted;
  return deleted ? `<li class="steps-deleted">${NONE} ${h(stepsDeletedText(deleted))}</li>\n` : '';
}

export interface RunPageExtras {
  /** The run's approvals, when the console has an approval desk. */
  approvals?: readonly Approval[];
  nav?: Nav;
}

export function runPage(timeline: Timeline, extras: RunPageExtras = {}): string {
  const { run } = timeline;
  const usage = run.usage;
  const figures: [string, string][] = [
    ['Cost (USD)', formatUsd(usage.costUsd)],
    ['Total tokens', formatInt(usage.totalTokens)],
    ['Prompt tokens', formatInt(usage.promptTokens)],
    ['Completion tokens', formatInt(usage.completionTokens)],
  ];
  if (usage.cachedPromptTokens > 0)
    figures.push(['Cached prompt tokens', formatInt(usage.cachedPromptTokens)]);
  if (usage.reasoningTokens > 0) figures.push(['Reasoning tokens', formatInt(usage.reasoningTokens)]);
  figures.push(
    ['Steps', formatInt(run.steps)],
    ['Tool calls', formatInt(run.toolCalls)],
    ['Duration', run.durationMs === null ? 'running' : formatDuration(run.durationMs)],
    ['Attempts', formatInt(run.attempts)],
  );
  const batch =
    run.batchId === null ? '' : ` · batch <a href="${href('batches', run.batchId)}">${h(run.batchId)}</a>`;
  const stopped = run.stopDetail
    ? `<p class="problem stop-detail">Why it stopped (${h(run.stopReason ?? '')}): ${h(run.stopDetail)}</p>`
    : '';
  const estimated = usage.estimated
    ? `<p class="meta">Token counts are estimated: the endpoint reported no usage for some call.</p>`
    : '';
  const error = run.error
    ? `<p class="problem">${h(run.error.kind)} / ${h(run.error.code)}: ${h(run.error.message)}</p>`
    : '';
  const answer =
    run.answer === null
      ? `<p class="none">no answer</p>`
      : `<div class="markdown answer">${renderSafeMarkdown(run.answer)}</div>`;
  const output =
    'output' in run ? `<h2>Structured output</h2><pre class="output">${json(run.output)}</pre>` : '';
  const body = `<h1>Run ${h(run.jobId)} ${badge(run.status)}${run.stopReason ? ` <span class="meta">${h(run.stopReason)}</span>` : ''}</h1>
<p class="meta">agent <strong>${h(run.agent)}</strong>${run.tenant ? ` · tenant <strong>${h(run.tenant)}</strong>` : ''} · model ${h(run.model)} · protocol ${h(run.protocol)} · started ${h(formatTime(run.startedAt))}${run.finishedAt ? ` · finished ${h(formatTime(run.finishedAt))}` : ''}${batch} · <a href="${boardJobHref(TASKS_QUEUE, run.jobId)}">job in Bull Board</a></p>
<h2>Task</h2>
<pre class="task">${h(run.task)}</pre>
${cards(figures)}
${estimated}
${stopped}
${error}
${treeSection(timeline.tree)}
${runApprovalsSection(extras.approvals)}
<h2>Answer</h2>
${answer}
${output}
<h2>Timeline</h2>
<ol class="timeline">
${stepsDeletedItem(timeline)}${timeline.entries.map(entryHtml).join('\n') || (timeline.run.stepsDeleted ? '' : `<li>${NONE} no step recorded</li>`)}
</ol>
<h2>Metadata</h2>
<pre>${json(run.metadata)}</pre>
<footer>Secrets and anything the redaction rules catch are shown as [redacted]. Observations are stored cut to 2,000 characters.</footer>`;
  return page(`Run ${run.jobId}`, body, extras.nav);
}
