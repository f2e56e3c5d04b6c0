// The demo's closing report, as plain text tables for a terminal.
import type { AgentResult } from '../kernel/types.js';
import type { CapturedMessage } from './smtp-sink.js';

export interface DemoTaskRow {
  label: string;
  task: string;
  result: AgentResult | null;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function resultsTable(rows: readonly DemoTaskRow[]): string {
  return table(
    ['task', 'status', 'stop reason', 'steps', 'tool calls', 'prompt tok', 'compl. tok', 'cost USD'],
    rows.map(({ label, task, result }) => [
      `${label} ${clip(task, 46)}`,
      result?.status ?? 'unfinished',
      result?.stopReason ?? '-',
      String(result?.steps ?? '-'),
      String(result?.toolCalls ?? '-'),
      result ? result.usage.promptTokens.toLocaleString('en-US') : '-',
      result ? result.usage.completionTokens.toLocaleString('en-US') : '-',
      result ? result.usage.costUsd.toFixed(4) : '-',
    ]),
  );
}

export function emailsTable(messages: readonly CapturedMessage[]): string {
  if (messages.length === 0) return '(no email captured)';
  return table(
    ['to', 'subject', 'first line'],
    messages.map((m) => [
      m.to.join(', '),
      clip(m.subject, 40),
      clip((m.text ?? '').split('\n')[0] ?? '', 50),
    ]),
  );
}
