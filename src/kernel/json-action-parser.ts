// Lenient parser for the JSON-in-text agent protocol. A model without native function calling answers with text
// holding one JSON object: {"tool": ..., "args": ...}, {"tools": [...]} or {"answer": ...}. Models wrap it in
// fences and prose and bend the syntax (single quotes, trailing commas, Python literals, cut-off output), so we
// hunt for the object with a string-aware brace matcher and let jsonrepair fix the syntax. When nothing usable is
// found, the reason is sent back to the model, so every reason says what to send instead.
import { jsonrepair } from 'jsonrepair';

export interface ProposedAction {
  tool: string;
  args: unknown;
}

export type ParsedJsonReply =
  | { kind: 'answer'; answer: string }
  | { kind: 'actions'; actions: ProposedAction[] }
  | { kind: 'invalid'; reason: string };

const EXPECTED =
  'Reply with exactly one JSON object: {"tool": "<name>", "args": {...}} or {"answer": "..."}.';
const EXPECTED_TOOLS = 'For several calls reply with {"tools": [{"tool": "<name>", "args": {...}}, ...]}.';
const NO_OBJECT = `Your reply had no JSON object. ${EXPECTED}`;
const UNPARSABLE = `Your reply's JSON object could not be parsed, even after repair. ${EXPECTED}`;
const ARRAY = `Your reply was a JSON array, but it must be one JSON object. ${EXPECTED_TOOLS}`;

// A fence opener at the start of a line: ```json, ```JSON, ``` ... The line-start anchor matters: JSON strings
// cannot hold raw newlines, so a ``` there can never be inside a string value such as a Markdown answer.
const FENCE = /^[ \t]*```[ \t]*([\w+-]*)/gm;

type JsonObject = Record<string, unknown>;

export function parseJsonReply(text: string): ParsedJsonReply {
  try {
    return parseReply(text);
  } catch {
    // Every parse below is already guarded; this net only keeps a surprise (say, a stack overflow on absurdly
    // deep nesting) from crashing the agent loop, since the input is model output.
    return invalid(UNPARSABLE);
  }
}

function parseReply(text: string): ParsedJsonReply {
  const whole = wholeObject(text);
  return whole ? interpret(whole) : scanReply(text);
}

/**
 * The reply when it is one strict JSON object and nothing else, the usual case, parsed at once: the scan would
 * find no fence, no array, and that object as its only candidate, so it would come to the same result.
 */
function wholeObject(text: string): JsonObject | undefined {
  if (text.includes('```')) return undefined;
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') || !trimmed.endsWith('}')) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The lenient scan of a reply: fenced objects first, then every top-level object, repaired when need be. */
export function scanReply(text: string): ParsedJsonReply {
  const starts = [...fenceContentStarts(text), 0];
  // Checked before the object scan, which would otherwise pick the first element and silently drop the rest.
  if (starts.some((start) => startsWithArrayOfObjects(text, start))) return invalid(ARRAY);

  let reason: string | undefined;
  let sawCandidate = false;
  for (const candidate of candidates(text, starts)) {
    sawCandidate = true;
    const value = parseLenient(candidate);
    if (!isObject(value)) continue;
    const reply = interpret(value);
    if (reply.kind !== 'invalid') return reply;
    // The first wrong-shaped object is most likely the one the model meant, so its reason is the one reported.
    reason ??= reply.reason;
  }
  return invalid(reason ?? (sawCandidate ? UNPARSABLE : NO_OBJECT));
}

/** Offsets just past each ```json or bare ``` fence opener; fences for other languages are not preferred. */
function fenceContentStarts(text: string): number[] {
  return [...text.matchAll(FENCE)]
    .filter((m) => /^(json\w*)?$/i.test(m[1] ?? ''))
    .map((m) => m.index + m[0].length);
}

/** Top-level `{…}` spans, fenced content first, then the whole text; each distinct span once. */
function* candidates(text: string, starts: number[]): Generator<string> {
  const seen = new Set<string>();
  for (const start of starts) {
    for (const span of objectSpans(text, start)) {
      if (seen.has(span)) continue;
      seen.add(span);
      yield span;
    }
  }
}

function* objectSpans(text: string, from: number): Generator<string> {
  for (let i = text.indexOf('{', from); i !== -1;) {
    const end = matchingClose(text, i, '{', '}');
    if (end === -1) {
      // Cut-off output: the rest is a candidate that jsonrepair can close, minus a closing fence, which would
      // otherwise be read as more object content.
      const fence = text.slice(i).search(/^[ \t]*```/m);
      yield fence === -1 ? text.slice(i) : text.slice(i, i + fence);
      return;
    }
    yield text.slice(i, end);
    i = text.indexOf('{', end);
  }
}

/** Index just past the bracket closing the one at `start`, or -1 when unterminated. Quotes of both kinds hide brackets. */
function matchingClose(text: string, start: number, open: string, close: string): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (quote !== undefined) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === open) depth++;
    else if (c === close && --depth === 0) return i + 1;
  }
  return -1;
}

/** Whether the text at `start` (after whitespace) is a JSON array holding an object, e.g. [{"tool": ...}]. */
function startsWithArrayOfObjects(text: string, start: number): boolean {
  const rest = text.slice(start).trimStart();
  if (!rest.startsWith('[')) return false;
  const end = matchingClose(rest, 0, '[', ']');
  if (end === -1) return false;
  const value = parseLenient(rest.slice(0, end));
  // Requiring an object keeps prose tags such as "[Thinking]" from counting as an array reply.
  return Array.isArray(value) && value.some(isObject);
}

function parseLenient(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    // Not strict JSON; try the repaired text.
  }
  try {
    return JSON.parse(jsonrepair(json));
  } catch {
    return undefined;
  }
}

function interpret(obj: JsonObject): ParsedJsonReply {
  const { tools, tool, answer } = obj;
  if (given(tools, answer)) return toolsReply(tools);
  if (given(tool, answer)) {
    const action = toAction(obj, tool, '"tool"');
    return typeof action === 'string'
      ? invalid(`${action} ${EXPECTED}`)
      : { kind: 'actions', actions: [action] };
  }
  if (answer !== undefined) {
    return { kind: 'answer', answer: typeof answer === 'string' ? answer : JSON.stringify(answer) };
  }
  const keys = Object.keys(obj);
  const found = keys.length === 0 ? 'was empty' : `had ${keyList(keys)} but no "tool" or "answer"`;
  return invalid(`Your JSON object ${found}. ${EXPECTED}`);
}

/** A null tool next to an answer means "no tool this turn": models often send {"tool": null, "answer": "..."}. */
function given(value: unknown, answer: unknown): boolean {
  return value !== undefined && !(value === null && answer !== undefined);
}

function toolsReply(tools: unknown): ParsedJsonReply {
  if (!Array.isArray(tools)) {
    return invalid(`"tools" must be an array, but it was ${show(tools)}. ${EXPECTED_TOOLS}`);
  }
  if (tools.length === 0) {
    return invalid(
      `"tools" was an empty array; put at least one {"tool": "<name>", "args": {...}} in it, or reply {"answer": "..."} to finish.`,
    );
  }
  const actions: ProposedAction[] = [];
  for (const [i, call] of tools.entries()) {
    const where = `"tools"[${i}]`;
    if (!isObject(call)) {
      return invalid(`${where} must be an object, but it was ${show(call)}. ${EXPECTED_TOOLS}`);
    }
    const action = toAction(call, call.tool ?? call.name, `${where}.tool`);
    if (typeof action === 'string') return invalid(`${action} ${EXPECTED_TOOLS}`);
    actions.push(action);
  }
  return { kind: 'actions', actions };
}

/** The action, or what was wrong with it as a sentence. */
function toAction(call: JsonObject, tool: unknown, where: string): ProposedAction | string {
  if (typeof tool !== 'string' || tool === '') {
    const got =
      tool === undefined
        ? `it was missing (the object had ${keyList(Object.keys(call))})`
        : `it was ${show(tool)}`;
    return `${where} must be a non-empty string naming the tool, but ${got}.`;
  }
  return { tool, args: toArgs(call.args ?? call.arguments ?? call.input) };
}

function toArgs(args: unknown): unknown {
  if (args === undefined || args === null) return {};
  // Some models double-encode, sending "args": "{\"path\": \"a.txt\"}".
  if (typeof args === 'string') {
    try {
      const parsed: unknown = JSON.parse(args);
      if (isObject(parsed)) return parsed;
    } catch {
      // Not JSON: leave the string for the tool's own argument validation to reject.
    }
  }
  return args;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function keyList(keys: string[]): string {
  if (keys.length === 0) return 'no keys';
  const shown = keys.slice(0, 5).map((key) => show(key));
  return `${keys.length === 1 ? 'key' : 'keys'} ${shown.join(', ')}${keys.length > 5 ? ', ...' : ''}`;
}

/** A short JSON rendering of a value for a reason; reasons go back into the model's context, so keep them small. */
function show(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 40 ? `${json.slice(0, 37)}...` : json;
}

function invalid(reason: string): ParsedJsonReply {
  return { kind: 'invalid', reason };
}
