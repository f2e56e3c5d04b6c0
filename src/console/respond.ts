// How the console's routes answer: an HTML page never cached (it shows the store as it is now), a problem page
// saying what is wrong, and the store's failure in words an operator can act on, without what the redaction
// rules hide.
import type { Response } from 'express';
import { scrubText } from '../logging/redact.js';
import { h, page, type Nav } from './pages/layout.js';

export function send(res: Response, status: number, html: string): void {
  res.status(status).type('html').set('Cache-Control', 'no-store').send(html);
}

export function problem(res: Response, status: number, title: string, message: string, nav?: Nav): void {
  send(res, status, page(title, `<h1>${h(title)}</h1><p class="problem">${h(message)}</p>`, nav));
}

export function storeFailed(res: Response, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  problem(res, 503, 'Store unavailable', `the fleet's store could not be read: ${scrubText(message)}`);
}
