// The scripted model of the real-tools scenario: the reference task's shape, with the real tools.
//   1. list_tables;  2. a query with a mistake the database refuses;  3. the corrected query;
//   4. three send_email calls in parallel (one per customer of the result);  5. the answer.
// Tasks read `bench real <name>`. It reads where a run is from the tool results it has seen, so any worker
// (or the bare loop replaying the recorded bodies) gets the same replies.
import type { ChatMessage } from '../../src/kernel/messages.js';
import { isSummaryRequest } from '../../src/kernel/memory.js';
import type { RecordedRequest, ScriptedReply } from '../../src/testing/scripted-model-server.js';

export const REAL_TOOLS_MODEL = 'real-tools';
export const realToolsTask = (name: string): string => `bench real ${name}`;

export const WRONG_SQL =
  "SELECT c.name, c.email, SUM(o.amount) AS q1_sales FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'completed' AND o.order_date BETWEEN '2024-01-01' AND '2024-03-31' GROUP BY c.id ORDER BY q1_sales DESC LIMIT 3";
export const RIGHT_SQL =
  "SELECT c.name, c.email, SUM(o.total) AS q1_sales FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'completed' AND o.order_date BETWEEN '2024-01-01' AND '2024-03-31' GROUP BY c.id, c.name, c.email ORDER BY q1_sales DESC LIMIT 3";

/** Tool results seen so far (native tool messages, or JSON-protocol observations). */
function results(messages: readonly ChatMessage[]): string[] {
  return messages
    .slice(2)
    .filter((m) => m.role === 'tool' || (m.role === 'user' && String(m.content).startsWith('Result')))
    .map((m) => String(m.content));
}

export function realToolsModel(request: RecordedRequest): ScriptedReply {
  if (isSummaryRequest(request.messages)) return { text: 'Done: tables listed, the query ran.' };
  const task = String(request.messages[1]?.content ?? '');
  if (!task.startsWith('bench real ')) return { answer: 'no plan' };
  const seen = results(request.messages);
  if (seen.length === 0) return { actions: [{ tool: 'list_tables', args: {} }] };
  if (seen.length === 1) return { actions: [{ tool: 'sql_query', args: { sql: WRONG_SQL } }] };
  if (seen.length === 2) return { actions: [{ tool: 'sql_query', args: { sql: RIGHT_SQL } }] };
  if (seen.length === 3) {
    const emails = [...new Set(seen[2]!.match(/[\w.+'-]+@example\.com/g) ?? [])].slice(0, 3);
    if (emails.length === 0) return { answer: `no customers in: ${seen[2]!.slice(0, 200)}` };
    return {
      actions: emails.map((to) => ({
        tool: 'send_email',
        args: {
          to,
          subject: 'Thank you for your business',
          body: `Dear ${to.split('@')[0]},\n\nThank you for being one of our top customers in the first quarter of 2024. We truly appreciate your business.\n\nBest regards,\nThe Sales Team`,
        },
      })),
    };
  }
  return { answer: `Top 3 customers emailed (${task}).` };
}
