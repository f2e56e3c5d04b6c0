// Cross-site request forgery on the board: a browser sends its cached Basic credentials with any request to the
// board, including a form another site posts (`text/plain`, so no preflight). Every state-changing request must
// therefore come from the board's own pages: its Origin and Sec-Fetch-Site, when the browser sends them, must
// say so, and its body, if any, must be JSON, which no cross-site form can send without a CORS preflight (and
// the board answers no preflight). Tools such as curl send neither header and are not affected.
import type { Request, RequestHandler } from 'express';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SameOriginGuardOptions {
  /** The board's origin as browsers see it (BOARD_ORIGIN); default: the request's own Host. */
  origin?: string;
  /**
   * Routes that take a plain HTML form (the console's decisions: its pages run no script, so cannot send JSON).
   * A form body there is accepted only when the browser says where it comes from (an Origin or Sec-Fetch-Site
   * that crossSiteRefusal accepted): a request that says neither cannot be told apart from a forgery.
   */
  formRoute?: (req: Request) => boolean;
}

function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

/** Why the request is refused, or null when it may go on. */
export function crossSiteRefusal(req: Request, options: SameOriginGuardOptions = {}): string | null {
  if (SAFE_METHODS.has(req.method)) return null;
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return `Sec-Fetch-Site ${site} is not same-origin`;
  const origin = req.get('origin');
  if (origin !== undefined) {
    const own = options.origin ? origin === options.origin : hostOf(origin) === (req.get('host') ?? null);
    if (!own) return `Origin ${origin} is not the board's`;
  }
  return null;
}

/** Whether a state-changing request carries something other than a JSON body. */
export function hasNonJsonBody(req: Request): boolean {
  if (SAFE_METHODS.has(req.method)) return false;
  const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
  if (req.get('content-type') === undefined) return hasBody;
  return !req.is('application/json');
}

export function sameOriginGuard(options: SameOriginGuardOptions = {}): RequestHandler {
  return (req, res, next) => {
    const refusal = crossSiteRefusal(req, options);
    if (refusal) {
      res.status(403).type('text/plain').send(`Forbidden: ${refusal}`);
      return;
    }
    if (options.formRoute?.(req) && req.is('application/x-www-form-urlencoded')) {
      if (req.get('origin') !== undefined || req.get('sec-fetch-site') !== undefined) return next();
      res
        .status(403)
        .type('text/plain')
        .send("Forbidden: a form must come from the board's own page (no Origin)");
      return;
    }
    if (hasNonJsonBody(req)) {
      res
        .status(415)
        .type('text/plain')
        .send('Unsupported Media Type: a request body must be application/json');
      return;
    }
    next();
  };
}
