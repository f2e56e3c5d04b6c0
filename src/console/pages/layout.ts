// The run console's page shell: one stylesheet inline (the board's CSP allows inline styles, never scripts), a
// navigation bar, no script at all, nothing loaded from anywhere but the board. Every text from the store goes
// through `h` (HTML escaping) before it gets here; links are built with `href` from path segments.
import { escapeHtml } from '../../reports/text.js';

export const h = escapeHtml;

/** The console's base path on the board. */
export const CONSOLE_PATH = '/console';

/** A console path from raw segments, each percent-encoded, then escaped for an attribute. */
export function href(...segments: string[]): string {
  return h(`${CONSOLE_PATH}/${segments.map(encodeURIComponent).join('/')}`);
}

/** Bull Board's page of a job (the read-only board at `/`). */
export function boardJobHref(queue: string, jobId: string): string {
  return h(`/queue/${encodeURIComponent(queue)}/${encodeURIComponent(jobId)}`);
}

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;
  color: #212121; background: #fafafa; }
nav { background: #263238; color: #eceff1; padding: 10px 24px; display: flex; gap: 20px; align-items: baseline; }
nav a { color: #eceff1; text-decoration: none; }
nav a:hover { text-decoration: underline; }
nav .brand { font-weight: 700; }
main { max-width: 1280px; margin: 0 auto; padding: 20px 24px 40px; }
h1 { font-size: 20px; margin: 0 0 6px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 26px 0 10px; }
a { color: #1565c0; }
.meta { color: #616161; margin: 2px 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px; font-weight: 600; }
.badge.succeeded { background: #2e7d32; } .badge.stopped { background: #e65100; }
.badge.failed { background: #c62828; } .badge.running { background: #1565c0; } .badge.pending { background: #9e9e9e; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; margin-top: 14px; }
.card { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px 12px; }
.card .value { font-size: 18px; font-weight: 600; }
.card .name { color: #616161; font-size: 12px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #e0e0e0; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.runs { width: 100%; font-size: 13px; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: end; background: #fff; border: 1px solid #e0e0e0;
  border-radius: 6px; padding: 10px 12px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: #616161; gap: 2px; }
form.filters input, form.filters select { font: inherit; padding: 3px 6px; }
.none { color: #9e9e9e; }
.error { color: #c62828; }
.problem { background: #ffebee; border: 1px solid #ef9a9a; border-radius: 6px; padding: 8px 12px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; padding: 6px 8px; background: #f5f5f5;
  border-radius: 4px; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
ol.timeline { list-style: none; padding: 0; margin: 0; }
ol.timeline > li { background: #fff; border: 1px solid #e0e0e0; border-left: 4px solid #90a4ae; border-radius: 4px;
  padding: 8px 12px; margin: 8px 0; }
ol.timeline > li.model { border-left-color: #5e35b1; }
ol.timeline > li.tool.ok { border-left-color: #2e7d32; }
ol.timeline > li.tool.failed { border-left-color: #c62828; }
ol.timeline > li.fold { border-left-color: #00838f; }
ol.timeline > li.decision { border-left-color: #e65100; background: #fff8e1; }
table.notes pre.note-text { margin: 0; max-width: 480px; }
ol.timeline ul.notes { margin: 4px 0; padding-left: 18px; } code.note-id { color: #616161; font-size: 12px; }
ol.timeline > li.answer { border-left-color: #1565c0; }
.entry-head { font-weight: 600; }
.entry-head .step { color: #757575; font-weight: 400; margin-right: 6px; }
.facts { color: #424242; font-size: 13px; }
dl.email { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 4px 0; }
dl.email dt { color: #616161; } dl.email dd { margin: 0; overflow-wrap: anywhere; }
.label { color: #616161; font-size: 12px; margin-top: 6px; }
.markdown { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 4px 16px; overflow-x: auto; }
.markdown table { margin: 8px 0; }
.markdown .link, .markdown .image { color: #616161; }
figure.chart { margin: 0; overflow-x: auto; background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px; }
figure.chart svg { max-width: 100%; height: auto; }
footer { margin-top: 28px; color: #757575; font-size: 12px; }
nav .count { background: #e65100; color: #fff; border-radius: 10px; padding: 0 7px; font-size: 12px; font-weight: 600; }
.badge.approved { background: #2e7d32; } .badge.rejected { background: #c62828; } .badge.expired { background: #757575; }
.notice { background: #e8f5e9; border: 1px solid #a5d6a7; border-radius: 6px; padding: 8px 12px; }
article.approval { background: #fff; border: 1px solid #e0e0e0; border-left: 4px solid #90a4ae; border-radius: 4px;
  padding: 8px 12px; margin: 10px 0; }
article.approval.pending { border-left-color: #e65100; }
article.approval pre.arguments { max-height: 360px; overflow: auto; }
.decide { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 8px; }
.decide form { display: flex; flex-direction: column; gap: 4px; min-width: 280px; flex: 1; }
.decide label { font-size: 12px; color: #616161; display: flex; flex-direction: column; gap: 2px; }
.decide input, .decide textarea { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; padding: 3px 6px; }
.decide button { align-self: flex-start; font: inherit; padding: 3px 14px; }
.awaiting { color: #e65100; font-weight: 600; }
`;

/** What the navigation bar shows besides the runs and Bull Board. */
export interface Nav {
  /** The approvals link, when the console has an approval desk, with how many wait (when known). */
  approvals?: { pending: number | null };
}

function approvalsLink(nav: Nav): string {
  if (!nav.approvals) return '';
  const { pending } = nav.approvals;
  const count = pending ? ` <span class="count">${pending} pending</span>` : '';
  return `<a href="${CONSOLE_PATH}/approvals">Approvals${count}</a>`;
}

/** A whole page: `body` is HTML already escaped. */
export function page(title: string, body: string, nav: Nav = {}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${h(title)} · agent-fleet console</title>
<style>${CSS}</style>
</head>
<body>
<nav><span class="brand">agent-fleet</span><a href="${CONSOLE_PATH}/runs">Runs</a>${approvalsLink(nav)}<a href="${CONSOLE_PATH}/notes">Notes</a><a href="/">Queues (Bull Board)</a></nav>
<main>
${body}
</main>
</body>
</html>
`;
}

export function badge(status: string): string {
  return `<span class="badge ${h(status)}">${h(status)}</span>`;
}

export const NONE = '<span class="none">—</span>';

export function cards(items: readonly [string, string][]): string {
  const body = items
    .map(
      ([name, value]) =>
        `<div class="card"><div class="value">${h(value)}</div><div class="name">${h(name)}</div></div>`,
    )
    .join('\n');
  return `<section class="cards">\n${body}\n</section>`;
}
