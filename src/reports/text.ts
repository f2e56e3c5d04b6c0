// Text helpers shared by the batch report's renderers. Task texts and answers come from users and from an LLM:
// every renderer escapes them for its own output (HTML, XML, Markdown, terminal), and none trusts them.

// Characters XML 1.0 forbids (a standalone SVG with one of them does not parse), plus lone surrogates.
const XML_INVALID =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// What a terminal would act on: C0 controls but tab and newline, DEL, C1 (ESC sequences, CSI) and the
// bidirectional overrides that reorder what is shown.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TERMINAL_UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

const REPLACEMENT = '\uFFFD';

/** Text made safe for any XML or HTML text node or quoted attribute value. */
export function escapeXml(text: string): string {
  return text
    .replace(XML_INVALID, REPLACEMENT)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** HTML and XML need the same five escapes; the alias says which one a call site means. */
export const escapeHtml = escapeXml;

/** One line: every run of whitespace (newlines included) becomes one space. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** At most `max` user-perceived characters; a cut text ends with `…` (counted). Never splits an emoji. */
export function truncate(text: string, max: number): string {
  if (max <= 0) return '';
  // Cheap exit: a string no longer than max UTF-16 units cannot hold more than max graphemes.
  if (text.length <= max) return text;
  const parts: string[] = [];
  for (const { segment } of graphemes.segment(text)) {
    if (parts.length === max) {
      parts[max - 1] = '…';
      return parts.join('');
    }
    parts.push(segment);
  }
  return parts.join('');
}

/** One line, cut to `max` characters: for table cells and chart labels. */
export function label(text: string, max: number): string {
  return truncate(oneLine(text), max);
}

/** For stdout: no escape sequences or other controls reach the terminal, and the text stays on one line. */
export function terminalSafe(text: string): string {
  return oneLine(text.replace(TERMINAL_UNSAFE, REPLACEMENT));
}

/**
 * JSON for stdout: the characters terminalSafe replaces are written as `\uXXXX` escapes instead (inside strings,
 * where JSON.stringify leaves them raw), so the JSON still reads back the same and no control reaches the terminal.
 * With `indent` 0, one line (JSON Lines).
 */
export function terminalSafeJson(value: unknown, indent = 2): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(
    TERMINAL_UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Dollars with the decimals the amount needs (up to the 10 the store keeps), never fewer than 2. */
export function formatUsd(usd: number): string {
  const fixed = Math.abs(usd).toFixed(10).replace(/0+$/, '');
  const [whole = '0', fraction = ''] = fixed.split('.');
  const sign = usd < 0 && Number(fixed) !== 0 ? '-' : '';
  return `${sign}$${Number(whole).toLocaleString('en-US')}.${fraction.padEnd(2, '0')}`;
}

/** Integers with thousands separators: 1234567 → 1,234,567. */
export function formatInt(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

/** A share of a cap as a percentage with one decimal: 0.431 → 43.1%. */
export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return '—';
  return `${((part / whole) * 100).toFixed(1)}%`;
}

/** ISO 8601 in UTC to the second: 2026-11-30T01:02:03Z. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A batch's budget and how much of it the finished tasks used, in one line of plain text. */
export function describeBudget(report: {
  budget: { maxCostUsd: number | null; maxTokens: number | null };
  summary: { usage: { costUsd: number; totalTokens: number } };
}): string {
  const { maxCostUsd, maxTokens } = report.budget;
  const parts: string[] = [];
  if (maxCostUsd !== null) {
    parts.push(`${formatUsd(maxCostUsd)} (${formatPercent(report.summary.usage.costUsd, maxCostUsd)} used)`);
  }
  if (maxTokens !== null) {
    parts.push(
      `${formatInt(maxTokens)} tokens (${formatPercent(report.summary.usage.totalTokens, maxTokens)} used)`,
    );
  }
  return parts.length === 0 ? 'none (each task has its own)' : parts.join(', ');
}

/**
 * Inline text (never at the start of a line): one line, with each character that gives inline Markdown or HTML
 * a meaning escaped by a backslash (CommonMark lets any ASCII punctuation be escaped): emphasis, code, links
 * and images, tags and entities, and `|`, so a table cell cannot split.
 */
export function md(text: string): string {
  return oneLine(text).replace(/[\\`*_[\]<>|~&]/g, '\\$&');
}
