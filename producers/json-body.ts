// How every route of the API with a body reads it: JSON only, within a byte limit, and within key and depth limits
// counted on the raw bytes before JSON.parse spends time on them (src/queue/json-structure.ts). Errors go to the
// API's error handler (http-api.ts), which answers 413, 415 or 400.
import express, { type RequestHandler } from 'express';
import { scanJsonText, JsonStructureError, type JsonLimits } from '../src/queue/json-structure.js';

/** A task, a decision: one request's body. A batch has its own, larger limit (http-api.ts). */
export const BODY_LIMIT_BYTES = 64 * 1024;

export const requireJson: RequestHandler = (req, res, next) => {
  if (req.is('application/json')) return next();
  res.status(415).json({ error: 'unsupported_media_type', message: 'Content-Type must be application/json' });
};

/** express.json with a byte limit, refusing a body over `limits` before JSON.parse spends time on it. */
export function jsonBody(limitBytes: number, limits: JsonLimits): RequestHandler {
  return express.json({
    limit: limitBytes,
    type: 'application/json',
    strict: true,
    verify: (_req, _res, bytes) => {
      const issue = scanJsonText(bytes, limits);
      if (issue) throw new JsonStructureError({ path: issue.path, message: `the body ${issue.message}` });
    },
  });
}
