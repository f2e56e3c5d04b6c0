// The scripted model of the 20-call task (the shape): list the tables, describe two, one roster query
// per team, one query per each of the 12 people, one email, a table of all 12 as the answer. It reads the
// prompt like a model would, whatever its layout: a result counts as known only while some observation in
// the prompt (a tool message, a fact, a summary line) still shows it; what is no longer visible is asked for
// again. So a memory that loses results costs calls, and one that keeps them does not.
import { observationsIn } from '../../src/testing/transcript.js';
import type { RecordedRequest, ScriptedReply } from '../../src/testing/scripted-model-server.js';
import { TEAMS } from './cost-fixture.js';

export const ROSTER_TASK =
  'For each of the teams Support, Billing and Onboarding, find its members, then count the tickets each member ' +
  'closed in October 2026, one query per person. Email the table of all 12 people (name, team, tickets ' +
  'closed) to lead@example.com, then answer with that table.';

const rosterSql = (team: string) =>
  `SELECT p.name, p.email, t.name AS team FROM people p JOIN teams t ON t.id = p.team_id WHERE t.name = '${team}' ORDER BY p.name`;
const countSql = (name: string) =>
  "SELECT p.name, COUNT(t.id) AS closed_in_october FROM people p LEFT JOIN tickets t ON t.person_id = p.id AND t.status = 'closed' " +
  `AND t.closed_at >= '2026-10-01' AND t.closed_at < '2026-11-01' WHERE p.name = '${name.replace(/'/g, "''")}' GROUP BY p.name`;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Known {
  listed: boolean;
  described: Set<string>;
  members: Map<string, string[]>;
  counts: Map<string, number>;
  emailed: boolean;
}

function read(request: RecordedRequest): Known {
  const text = observationsIn(request.messages).join('\n');
  const members = new Map<string, string[]>();
  for (const team of TEAMS) {
    const rows = [...text.matchAll(new RegExp(`^(.+?) \\| \\S+@example\\.com \\| ${team}$`, 'gm'))];
    if (rows.length > 0) members.set(team, [...new Set(rows.map((m) => m[1]!))]);
  }
  const counts = new Map<string, number>();
  for (const names of members.values()) {
    for (const name of names) {
      const match = new RegExp(`^${escape(name)} \\| (\\d+)$`, 'm').exec(text);
      if (match) counts.set(name, Number(match[1]));
    }
  }
  const described = new Set<string>();
  if (/^people:$/m.test(text) && /team_id .*references teams\.id/.test(text)) described.add('people');
  if (/^tickets:$/m.test(text) && /person_id .*references people\.id/.test(text)) described.add('tickets');
  return {
    listed: /^people\(/m.test(text) && /^tickets\(/m.test(text),
    described,
    members,
    counts,
    emailed: /^Sent to lead@example\.com/m.test(text),
  };
}

function table(known: Known): string {
  const lines = ['name | team | tickets closed in October 2026'];
  for (const [team, names] of known.members)
    for (const name of names) lines.push(`${name} | ${team} | ${known.counts.get(name) ?? '?'}`);
  return lines.join('\n');
}

export function rosterReply(request: RecordedRequest): ScriptedReply {
  const known = read(request);
  const sql = (query: string): ScriptedReply => ({ actions: [{ tool: 'sql_query', args: { sql: query } }] });
  const everyone = [...known.members.values()].flat();
  const finalTurn = request.tools === undefined;
  if (!finalTurn) {
    if (!known.listed) return { actions: [{ tool: 'list_tables', args: {} }] };
    for (const name of ['people', 'tickets'])
      if (!known.described.has(name)) return { actions: [{ tool: 'describe_table', args: { table: name } }] };
    for (const team of TEAMS) if (!known.members.has(team)) return sql(rosterSql(team));
    for (const name of everyone) if (!known.counts.has(name)) return sql(countSql(name));
    if (!known.emailed) {
      return {
        actions: [
          {
            tool: 'send_email',
            args: {
              to: 'lead@example.com',
              subject: 'Tickets closed in October 2026',
              body: `Hello,\n\nHere are the tickets each person closed in October 2026:\n\n${table(known)}\n\nBest regards`,
            },
          },
        ],
      };
    }
  }
  return { answer: `Tickets closed in October 2026, per person:\n${table(known)}` };
}

/** Whether an answer lists all 12 people with the right counts. */
export function rosterSolved(
  answer: string | null,
  truth: { name: string; closedInOctober: number }[],
): boolean {
  if (!answer) return false;
  return truth.every((p) =>
    new RegExp(`^${escape(p.name)} \\| \\w+ \\| ${p.closedInOctober}$`, 'm').test(answer),
  );
}
