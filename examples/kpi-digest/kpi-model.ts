// The example's scripted model: a deterministic, rule-based stand-in for an LLM, so `npm run example:kpi` runs
// offline. It reads the conversation like a model would and plays the kpi-digest trajectory:
//   1. kpi_fetch and targets_lookup, as two parallel calls;
//   2. send_email with a digest built from what the two tools returned;
//   3. the digest as the structured answer.
// Anything that is not a kpi-digest task gets a 400, never a canned answer.
import type { ChatMessage } from '../../src/kernel/messages.js';
import type { RecordedRequest, ReplyRule, ScriptedReply } from '../../src/testing/scripted-model-server.js';
import type { Digest } from './agent-fleet.config.js';
import { percentOfTarget, type RegionTargets, type WeeklyKpis } from './kpi-data.js';

/** The results of the tool calls in the conversation, by tool name (the latest call of each). */
function toolResults(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  const results = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
    } else if (message.role === 'tool') {
      const name = names.get(message.tool_call_id);
      if (name) results.set(name, String(message.content));
    }
  }
  return results;
}

/** The JSON object a tool returned, wherever it sits in the tool message. */
function objectIn<T>(text: string | undefined): T | undefined {
  const start = text?.indexOf('{') ?? -1;
  if (!text || start < 0) return undefined;
  try {
    return JSON.parse(text.slice(start, text.lastIndexOf('}') + 1)) as T;
  } catch {
    return undefined;
  }
}

export function digestOf(kpis: WeeklyKpis, targets: RegionTargets): Digest {
  const vsTarget = percentOfTarget(kpis.revenue, targets.weeklyRevenue);
  const orderGap = kpis.orders - targets.weeklyOrders;
  return {
    region: kpis.region,
    week: kpis.week,
    revenue: kpis.revenue,
    orders: kpis.orders,
    vsTarget,
    highlights: [
      `Revenue at ${vsTarget}% of the weekly target.`,
      `${Math.abs(orderGap)} orders ${orderGap >= 0 ? 'above' : 'below'} target.`,
      `Top product: ${kpis.topProduct}.`,
    ],
  };
}

function kpiDigestReply(request: RecordedRequest): ScriptedReply | undefined {
  const input = objectIn<{ region: string; week: string }>(String(request.messages[1]?.content ?? ''));
  if (!input?.region || !input.week) return undefined;
  const seen = toolResults(request.messages);
  const kpis = objectIn<WeeklyKpis>(seen.get('kpi_fetch'));
  const targets = objectIn<RegionTargets>(seen.get('targets_lookup'));
  if (!kpis || !targets) {
    return {
      actions: [
        { tool: 'kpi_fetch', args: { region: input.region, week: input.week } },
        { tool: 'targets_lookup', args: { region: input.region } },
      ],
    };
  }
  const digest = digestOf(kpis, targets);
  if (!seen.has('send_email')) {
    const to = /email a short digest to (\S+@example\.com)/.exec(String(request.messages[0]?.content))?.[1];
    return {
      actions: [
        {
          tool: 'send_email',
          args: {
            to,
            subject: `KPI digest ${digest.region} ${digest.week}`,
            body: `Revenue ${digest.revenue}, ${digest.orders} orders.\n\n${digest.highlights.map((h) => `- ${h}`).join('\n')}`,
          },
        },
      ],
    };
  }
  return { output: digest };
}

export const NOT_A_KPI_TASK = 'the example model answers kpi-digest tasks only';

export const kpiModelRules: ReplyRule[] = [
  (request) => kpiDigestReply(request) ?? { fault: 'bad_request', message: NOT_A_KPI_TASK },
];
