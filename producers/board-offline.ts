// Bull Board's page links a web font from Google Fonts: a request to a third party each time the board opens,
// which fails offline (and the CSP blocks anyway). This takes every <link> to another origin out of the HTML
// the board renders, so the page asks nothing of the internet and falls back to a system font. Bull Board's
// own styles and scripts are relative links and stay.
import type { RequestHandler } from 'express';

const EXTERNAL_LINK = /<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?\/\/[^>]*>\s*/gi;

/** `html` without its links to other origins (stylesheets, fonts, preconnects). */
export function withoutExternalLinks(html: string): string {
  return html.replace(EXTERNAL_LINK, '');
}

/** An HTML page about to be sent: no Content-Type yet (res.render's string) or an HTML one, never JSON. */
function isHtmlPage(body: unknown, contentType: string | undefined): body is string {
  if (typeof body !== 'string' || !body.includes('<link')) return false;
  if (contentType !== undefined && !/^text\/html\b/i.test(contentType)) return false;
  return /^\s*<!doctype html/i.test(body);
}

/** Rewrites the HTML pages the routes after it send (Bull Board's page is one string sent by res.render). */
export const noExternalResources: RequestHandler = (_req, res, next) => {
  const send = res.send.bind(res);
  res.send = (body?: unknown) =>
    send(isHtmlPage(body, res.get('Content-Type')) ? withoutExternalLinks(body) : body);
  next();
};
