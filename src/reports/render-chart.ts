// The batch report's chart: one SVG string, no browser and no dependencies. One row per task, in batch order,
// with two panels side by side that each have their own axis: the task's cost and its steps. Horizontal bars
// keep the labels readable from 1 task to hundreds (the chart grows in height, 16 px a task); a task with no
// finished run has no bars, only its status. Every text is XML-escaped: task texts come from users.
import type { BatchReport, TaskState } from './batch-summary.js';
import { escapeXml, formatUsd, label } from './text.js';

export interface ChartTask {
  index: number;
  jobId: string;
  task: string | null;
  status: TaskState;
  /** Null when the task has no finished run. */
  costUsd: number | null;
  steps: number | null;
  toolCalls?: number | null;
}

export interface ChartOptions {
  title?: string;
}

export const STATUS_COLORS: Record<TaskState, string> = {
  succeeded: '#2e7d32',
  stopped: '#e65100',
  failed: '#c62828',
  running: '#1565c0',
  pending: '#9e9e9e',
};

const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
const WIDTH = 920;
const MARGIN = 16;
const ROW = 16;
const BAR = 10;
const LABEL_CHARS = 33; // about 210 px at 11 px
const STATUS_X = 240;
const COST = { x: 316, width: 360 };
const STEPS = { x: 720, width: 184 };
const VALUE_ROOM = { cost: 84, steps: 30 }; // space kept right of the longest bar for its value
const TOP = 104; // first row
const BOTTOM_AXIS_FROM = 25; // repeat the tick labels under the rows from this many tasks

/** The chart of a batch report. */
export function renderBatchChart(report: BatchReport): string {
  return renderChart(report.rows, { title: `Batch ${report.batchId}: cost and steps per task` });
}

export function renderChart(tasks: readonly ChartTask[], options: ChartOptions = {}): string {
  const title = label(options.title ?? 'Cost and steps per task', 90);
  if (tasks.length === 0) return emptyChart(title);

  const costs = tasks.map((task) => task.costUsd ?? 0);
  const steps = tasks.map((task) => task.steps ?? 0);
  const costAxis = niceAxis(Math.max(...costs), false);
  const stepAxis = niceAxis(Math.max(...steps), true);
  const rowsBottom = TOP + tasks.length * ROW;
  const bottomAxis = tasks.length >= BOTTOM_AXIS_FROM;
  const height = rowsBottom + (bottomAxis ? 22 : 0) + 30;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(title)}" font-family="${FONT}" font-size="11">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${MARGIN}" y="26" font-size="15" font-weight="600" fill="#212121">${escapeXml(title)}</text>`,
  );
  out.push(legend(tasks));

  // Zebra rows first, so bars and grid lines are drawn over them.
  out.push('<g fill="#f5f5f5">');
  for (let i = 1; i < tasks.length; i += 2) {
    out.push(`<rect x="${MARGIN}" y="${TOP + i * ROW}" width="${WIDTH - 2 * MARGIN}" height="${ROW}"/>`);
  }
  out.push('</g>');

  out.push(
    panel('Cost (USD)', COST, costAxis, VALUE_ROOM.cost, rowsBottom, bottomAxis, (v, step) =>
      formatTick(v, step),
    ),
    panel('Steps', STEPS, stepAxis, VALUE_ROOM.steps, rowsBottom, bottomAxis, (v) => String(v)),
  );
  out.push(
    `<text x="${MARGIN}" y="${TOP - 8}" font-weight="600" fill="#424242">Task</text>`,
    `<text x="${STATUS_X}" y="${TOP - 8}" font-weight="600" fill="#424242">Status</text>`,
  );

  tasks.forEach((task, i) => out.push(row(task, TOP + i * ROW, costAxis, stepAxis)));
  out.push(
    `<text x="${MARGIN}" y="${height - 10}" font-size="10" fill="#757575">${plural(tasks.length, 'task')}; bars are drawn for finished tasks only</text>`,
    '</svg>',
  );
  return out.join('\n') + '\n';
}

interface Axis {
  max: number;
  step: number;
}

/** 0 to a round maximum in 2-5 ticks of 1, 2 or 5 × 10^k; integer steps for counts. */
export function niceAxis(max: number, integer: boolean): Axis {
  const top = max > 0 && Number.isFinite(max) ? max : integer ? 1 : 0.01;
  const raw = top / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude;
  let step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
  if (integer) step = Math.max(1, Math.round(step));
  return { max: Math.ceil(top / step - 1e-9) * step, step };
}

function formatTick(value: number, step: number): string {
  const decimals = Math.min(10, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
  return `$${value.toFixed(decimals)}`;
}

function panel(
  title: string,
  area: { x: number; width: number },
  axis: Axis,
  valueRoom: number,
  rowsBottom: number,
  bottomAxis: boolean,
  tick: (value: number, step: number) => string,
): string {
  const plot = area.width - valueRoom;
  const out = [
    `<g>`,
    `<text x="${area.x}" y="${TOP - 38}" font-weight="600" fill="#424242">${escapeXml(title)}</text>`,
  ];
  const ticks = Math.round(axis.max / axis.step);
  for (let i = 0; i <= ticks; i++) {
    const value = i * axis.step;
    const x = round(area.x + (plot * value) / axis.max);
    const text = escapeXml(tick(value, axis.step));
    const anchor = i === 0 ? 'start' : 'middle';
    out.push(
      `<line x1="${x}" y1="${TOP - 4}" x2="${x}" y2="${rowsBottom}" stroke="${i === 0 ? '#616161' : '#e0e0e0'}" stroke-width="1"/>`,
      `<text x="${x}" y="${TOP - 10}" text-anchor="${anchor}" font-size="10" fill="#616161">${text}</text>`,
    );
    if (bottomAxis) {
      out.push(
        `<text x="${x}" y="${rowsBottom + 14}" text-anchor="${anchor}" font-size="10" fill="#616161">${text}</text>`,
      );
    }
  }
  out.push('</g>');
  return out.join('\n');
}

function row(task: ChartTask, y: number, costAxis: Axis, stepAxis: Axis): string {
  const color = STATUS_COLORS[task.status];
  const name = task.task !== null && task.task.trim() !== '' ? task.task : `job ${task.jobId}`;
  const middle = y + ROW / 2 + 4;
  const barY = y + (ROW - BAR) / 2;
  const out = [
    '<g>',
    `<title>${escapeXml(tooltip(task))}</title>`,
    `<text x="${MARGIN}" y="${middle}" fill="#212121">${escapeXml(label(`${task.index}. ${name}`, LABEL_CHARS))}</text>`,
    `<text x="${STATUS_X}" y="${middle}" fill="${color}" font-weight="600">${task.status}</text>`,
  ];
  if (task.costUsd === null || task.steps === null) {
    out.push(
      `<text x="${COST.x + 4}" y="${middle}" fill="#9e9e9e" font-style="italic">no result yet</text>`,
      '</g>',
    );
    return out.join('\n');
  }
  const costPlot = COST.width - VALUE_ROOM.cost;
  const costWidth = barWidth(task.costUsd, costAxis.max, costPlot);
  out.push(
    `<rect x="${COST.x}" y="${barY}" width="${costWidth}" height="${BAR}" fill="${color}"/>`,
    `<text x="${round(COST.x + costWidth + 4)}" y="${middle}" fill="#424242">${escapeXml(formatUsd(task.costUsd))}</text>`,
  );
  const stepPlot = STEPS.width - VALUE_ROOM.steps;
  const stepWidth = barWidth(task.steps, stepAxis.max, stepPlot);
  out.push(
    `<rect x="${STEPS.x}" y="${barY}" width="${stepWidth}" height="${BAR}" fill="${color}" fill-opacity="0.55"/>`,
    `<text x="${round(STEPS.x + stepWidth + 4)}" y="${middle}" fill="#424242">${task.steps}</text>`,
    '</g>',
  );
  return out.join('\n');
}

/** A positive value is never drawn thinner than 1 px, so a cheap task still shows a bar. */
function barWidth(value: number, max: number, plot: number): number {
  if (value <= 0) return 0;
  return round(Math.max(1, Math.min(plot, (plot * value) / max)));
}

function tooltip(task: ChartTask): string {
  const parts = [`#${task.index} job ${task.jobId}: ${task.status}`];
  if (task.costUsd !== null) parts.push(formatUsd(task.costUsd));
  if (task.steps !== null) parts.push(plural(task.steps, 'step'));
  if (task.toolCalls !== null && task.toolCalls !== undefined)
    parts.push(plural(task.toolCalls, 'tool call'));
  const text = task.task === null ? '' : ` — ${label(task.task, 300)}`;
  return parts.join(', ') + text;
}

function legend(tasks: readonly ChartTask[]): string {
  const present = (Object.keys(STATUS_COLORS) as TaskState[]).filter((status) =>
    tasks.some((task) => task.status === status),
  );
  const out = ['<g font-size="11">'];
  let x = MARGIN;
  for (const status of present) {
    out.push(
      `<rect x="${x}" y="40" width="10" height="10" fill="${STATUS_COLORS[status]}"/>`,
      `<text x="${x + 14}" y="49" fill="#424242">${status}</text>`,
    );
    x += 28 + Math.round(status.length * 6.2);
  }
  out.push('</g>');
  return out.join('\n');
}

function emptyChart(title: string): string {
  const height = 90;
  return (
    [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(title)}" font-family="${FONT}" font-size="11">`,
      `<title>${escapeXml(title)}</title>`,
      `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
      `<text x="${MARGIN}" y="26" font-size="15" font-weight="600" fill="#212121">${escapeXml(title)}</text>`,
      `<text x="${MARGIN}" y="60" fill="#757575">No tasks in this batch.</text>`,
      '</svg>',
    ].join('\n') + '\n'
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
