// The run console's routes, mounted by the board (producers/board-app.ts) at /console behind its login and its
// read-only guard: GET only, HTML pages, no script. A store that cannot be read gives a 503 page saying so.
import { Router, type Request, type Response } from 'express';
import { scrubText } from '../logging/redact.js';
import { buildBatchReport } from '../reports/batch-summary.js';
import type { ConsoleStore } from './console-store.js';
import { batchPage } from './pages/batch-page.js';
import { CONSOLE_PATH, h, page } from './pages/layout.js';
import { runPage } from './pages/run-page.js';
import { parseRunFilters, runsPage } from './pages/runs-page.js';
import { buildTimeline } from './timeline.js';

/** Job and batch ids are VARCHAR(64): anything longer names nothing. */
const ID_MAX = 64;

function send(res: Response, status: number, html: string): void {
  res.status(status).type('html').set('Cache-Control', 'no-store').send(html);
}

function problem(res: Response, status: number, title: string, message: string): void {
  send(res, status, page(title, `<h1>${h(title)}</h1><p class="problem">${h(message)}</p>`));
}

/** The store's failure, in words an operator can act on, without what the redaction rules hide. */
function storeFailed(res: Response, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  problem(res, 503, 'Store unavailable', `the fleet's store could not be read: ${scrubText(message)}`);
}

export function consoleRouter(store: ConsoleStore): Router {
  const router = Router();

  router.get('/', (_req, res) => res.redirect(302, `${CONSOLE_PATH}/runs`));

  router.get('/runs', async (req: Request, res: Response) => {
    const query = req.query as Record<string, unknown>;
    const parsed = parseRunFilters(query);
    if (!parsed.ok) return send(res, 400, runsPage([], query, parsed.message));
    try {
      send(res, 200, runsPage(await store.listRuns(parsed.filters), query));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  router.get('/runs/:jobId', async (req: Request<{ jobId: string }>, res: Response) => {
    const { jobId } = req.params;
    if (jobId.length > ID_MAX) return problem(res, 404, 'No such run', `no run has an id that long`);
    try {
      const loaded = await store.loadRun(jobId);
      if (loaded === null) return problem(res, 404, 'No such run', `no run ${jobId} in agent_runs`);
      send(res, 200, runPage(buildTimeline(loaded.run, loaded.steps)));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  router.get('/batches/:batchId', async (req: Request<{ batchId: string }>, res: Response) => {
    const { batchId } = req.params;
    try {
      const loaded = batchId.length > ID_MAX ? null : await store.loadBatch(batchId);
      if (loaded === null) return problem(res, 404, 'No such batch', `no batch ${batchId} in agent_batches`);
      send(res, 200, batchPage(buildBatchReport(loaded.batch, loaded.runs, { emails: loaded.emails })));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  return router;
}
