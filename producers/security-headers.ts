// The response headers every answer of the API and the board carries: no framing (clickjacking), no MIME
// sniffing, no Referer leaking job ids to other sites, and a Content-Security-Policy that lets a page load
// only what its own server serves.
import type { RequestHandler } from 'express';

/**
 * Bull Board's page loads its own scripts, styles, images and JSON from the board's origin; its HTML and its
 * React components set inline styles. Its Google Fonts link is left blocked on purpose: the operator's browser
 * contacts no third party, and the page falls back to a system font.
 */
export const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  // Its JSON viewer highlights code in a Web Worker loaded from the board's own static files.
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The API answers JSON (and Prometheus text) only: nothing it serves may load or run anything. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function securityHeaders(contentSecurityPolicy: string): RequestHandler {
  return (_req, res, next) => {
    res.set({
      'Content-Security-Policy': contentSecurityPolicy,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Resource-Policy': 'same-origin',
    });
    next();
  };
}
