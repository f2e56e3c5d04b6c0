// A model's answer rendered as Markdown for the run console, treating the text as hostile: headings, lists,
// emphasis, code and tables (GFM) become HTML, and nothing else does. Raw HTML in the text is shown as text,
// links become their text followed by the address as plain text (nothing to click, so no other origin is one
// click away), images become their alt text (nothing is fetched). marked escapes every text it emits; the page's
// Content-Security-Policy (no inline script, images only from the board) is the second line of defence.
import { Marked, type Tokens } from 'marked';
import { escapeHtml } from '../reports/text.js';

/** Past this many characters the rest is not rendered: marked's time grows with its input. */
export const MARKDOWN_MAX_CHARS = 100_000;

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHtml(text),
    link({ href, tokens }: Tokens.Link): string {
      const text = this.parser.parseInline(tokens);
      const address = escapeHtml(href);
      // An autolink's text is its address (an email's, without `mailto:`): once is enough.
      if (text === address || `mailto:${text}` === address) return `<span class="link">${text}</span>`;
      return `${text} <span class="link">(${address})</span>`;
    },
    image: ({ text }: Tokens.Image) => `<span class="image">[image: ${escapeHtml(text)}]</span>`,
  },
});

/** HTML for `markdown`, safe to put inside a page. */
export function renderSafeMarkdown(markdown: string): string {
  const cut = markdown.length > MARKDOWN_MAX_CHARS;
  const source = cut ? markdown.slice(0, MARKDOWN_MAX_CHARS) : markdown;
  const html = marked.parse(source, { async: false });
  return cut ? `${html}<p class="none">… (cut at ${MARKDOWN_MAX_CHARS} characters)</p>` : html;
}
