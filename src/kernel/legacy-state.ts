// Checkpoints written before the native transcript, resumed into it. Two layouts put tool output where the model
// reads it with more than a tool's authority: the facts layout (each finished turn's calls and results in a user
// message) and the old deterministic summary (`Done so far:` with a `result:` line per result, or a line of a whole
// facts block, then sent as a user message). A resumed run keeps only what the model did, as the lines of its own summary (an assistant message);
// the results are dropped, and the model calls again for what it still needs. Runs once, when a run is built from
// a checkpoint; a state of the current layout goes through unchanged.
import type { RunState } from './types.js';

/** The fields of a state saved under the facts layout (gone from RunState). */
interface LegacyFields {
  facts?: string[];
  historyFacts?: string[];
}

/** Brings a state saved by an older layout to the current one, in place. `tools`: the names the run may call. */
export function migrateLegacyState(state: RunState, tools: readonly string[]): void {
  const legacy = state as RunState & LegacyFields;
  if (state.summary !== null) state.summary = migrateOldSummary(state.summary) || null;
  if (legacy.facts === undefined && legacy.historyFacts === undefined) return;
  // historyFacts described turns still in the history as they were sent: only the facts blocks carry turns away.
  const calls = (legacy.facts ?? []).flatMap((block) => callLabels(block, new Set(tools)));
  const lines = calls.map((label) => `- ${label} (result not kept)`);
  if (lines.length > 0) state.summary = [state.summary, ...lines].filter(Boolean).join('\n');
  delete legacy.facts;
  delete legacy.historyFacts;
}

/**
 * The call lines of one facts block (one or more turns: `#<step> <tool> <args>`, then its result, for each call). A
 * result is free text and may hold lines of the same shape (a ticket reading `#2 notify to=…`): a line counts as a
 * call only when it is the block's first, or names a tool the run has, at its step or a later one. What still passes
 * for one is a line the model was shown as the user's words until now; its result is never kept.
 */
function callLabels(block: string, tools: ReadonlySet<string>): string[] {
  let step = 0;
  return block.split('\n').filter((line, i) => {
    const label = /^#(\d+) (\S+)/.exec(line);
    // `#3 (no valid action: …)` is no call.
    if (!label || label[2]!.startsWith('(')) return false;
    const at = Number(label[1]);
    if (at < step || (i > 0 && !tools.has(label[2]!))) return false;
    step = at;
    return true;
  });
}

/** The shape of the old deterministic summary, whole: a model's summary never is. */
const OLD_SUMMARY = /^Done so far:\n([\s\S]*)\nCurrent goal: [^\n]*$/;

/**
 * The old deterministic summary as the model's own lines: its calls and its words kept, every result and every
 * user message dropped (they were tool output and kernel text; a facts block folded into it is one `user:` line,
 * its calls and results run together, so it goes whole). Any other summary is returned as it is.
 */
function migrateOldSummary(summary: string): string {
  const body = OLD_SUMMARY.exec(summary)?.[1];
  if (body === undefined) return summary;
  return body
    .split('\n')
    .filter((line) => !/^- (result|user|tool|system): /.test(line))
    .map((line) =>
      line
        .replace(/^- call /, '- I called ')
        .replace(/^- assistant: /, '- I wrote: ')
        .replace(/^- \(earlier actions omitted\)$/, '- (earlier steps omitted)'),
    )
    .join('\n');
}
