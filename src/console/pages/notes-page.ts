// The console's read-only list of the notes agents keep across tasks (docs/notes.md), newest first, by agent and
// tenant: what a run of that agent may be opened with. A note's text is data a tool or a model wrote, so it is
// escaped like every text; forgetting one takes `npm run memory` or DELETE /v1/notes (the console only reads).
import type { Note } from '../../notes/note.js';
import { formatTime } from '../../reports/text.js';
import { CONSOLE_PATH, h, href, NONE, page, type Nav } from './layout.js';

export const NOTES_PAGE_LIMIT = 200;

export interface NotesView {
  notes: readonly Note[];
  raw: Record<string, unknown>;
  problem?: string;
  nav: Nav;
}

function filterForm(raw: Record<string, unknown>): string {
  const value = (name: string) => (typeof raw[name] === 'string' ? h(raw[name]) : '');
  return `<form class="filters" method="get" action="${CONSOLE_PATH}/notes">
<label>Agent <input name="agent" value="${value('agent')}" maxlength="64"></label>
<label>Tenant <input name="tenant" value="${value('tenant')}" maxlength="64"></label>
<button type="submit">Filter</button> <a href="${CONSOLE_PATH}/notes">all</a>
</form>`;
}

function row(note: Note): string {
  const used = note.lastUsedAt === null ? NONE : h(formatTime(note.lastUsedAt));
  return `<tr id="${h(note.id)}"><td><code>${h(note.id)}</code></td><td>${h(note.agent)}</td><td>${note.tenant === '' ? NONE : h(note.tenant)}</td><td>${h(note.kind)}</td>
<td><pre class="note-text">${h(note.text)}</pre></td><td>${h(formatTime(note.createdAt))}</td><td>${used}</td><td>${note.useCount}</td><td>${note.weight}</td><td>${h(formatTime(note.expiresAt))}</td>
<td><a href="${href('runs', note.sourceJobId)}">${h(note.sourceJobId)}</a> step ${note.sourceStep}</td></tr>`;
}

export function notesPage(view: NotesView): string {
  const problem = view.problem ? `<p class="problem">${h(view.problem)}</p>` : '';
  const list =
    view.notes.length === 0
      ? `<p class="none">no notes</p>`
      : `<table class="notes"><thead><tr><th>id</th><th>agent</th><th>tenant</th><th>kind</th><th>text</th><th>learned</th><th>last used</th><th>uses</th><th>weight</th><th>expires</th><th>from run</th></tr></thead>
<tbody>${view.notes.map(row).join('\n')}</tbody></table>`;
  const body = `<h1>Notes</h1>
<p class="meta">What agents keep across tasks, newest first (at most ${NOTES_PAGE_LIMIT}; live ones only): data a run is opened with, never an instruction. Forgetting takes <code>npm run memory</code> or the API (DELETE /v1/notes).</p>
${filterForm(view.raw)}${problem}${list}`;
  return page('Notes', body, view.nav);
}
