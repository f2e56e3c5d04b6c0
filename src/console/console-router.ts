// The run console's routes, mounted by the board (producers/board-app.ts) at /console behind its login: HTML
// pages, no script: runs, batches, agents' notes, approvals. Read-only but for one route: with an approval desk,
// an approver's login may decide an approval (approval-routes.ts), which the board's read-only guard lets through
// for that login alone. A store that cannot be read gives a 503 page saying so.
import { Router, type Request, type Response } from 'express';
import { buildBatchReport } from '../reports/batch-summary.js';
import { approvalRoutes } from './approval-routes.js';
import type { ConsoleDesk } from './console-desk.js';
import { navOf } from './console-nav.js';
import type { ConsoleStore } from './console-store.js';
import { batchPage } from './pages/batch-page.js';
import { CONSOLE_PATH } from './pages/layout.js';
import { NOTES_PAGE_LIMIT, notesPage } from './pages/notes-page.js';
import { runPage } from './pages/run-page.js';
import { parseRunFilters, runsPage } from './pages/runs-page.js';
import { problem, send, storeFailed } from './respond.js';
import { buildTimeline } from './timeline.js';
import { noteListQuerySchema } from '../client/note-schemas.js';

/** Job and batch ids are VARCHAR(64): anything longer names nothing. */
const ID_MAX = 64;
/** A run asks for few approvals; a runaway one's first ones are enough to show. */
const RUN_APPROVALS_LIMIT = 100;

export interface ConsoleOptions {
  /** The approval desk: the approvals pages, a run's approvals, deciding for an approver. None: no approvals. */
  approvals?: ConsoleDesk;
}

export function consoleRouter(store: ConsoleStore, options: ConsoleOptions = {}): Router {
  const router = Router();
  const { approvals } = options;
  const nav = () => navOf(store, approvals !== undefined);

  router.get('/', (_req, res) => res.redirect(302, `${CONSOLE_PATH}/runs`));

  router.get('/runs', async (req: Request, res: Response) => {
    const query = req.query as Record<string, unknown>;
    const parsed = parseRunFilters(query);
    try {
      if (!parsed.ok) return send(res, 400, runsPage([], query, parsed.message, await nav()));
      send(res, 200, runsPage(await store.listRuns(parsed.filters), query, undefined, await nav()));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  router.get('/runs/:jobId', async (req: Request<{ jobId: string }>, res: Response) => {
    const { jobId } = req.params;
    if (jobId.length > ID_MAX) return problem(res, 404, 'No such run', `no run has an id that long`);
    try {
      const loaded = await store.loadRun(jobId);
      if (loaded === null)
        return problem(res, 404, 'No such run', `no run ${jobId} in agent_runs${store.notFoundNote}`);
      const shown = await nav();
      // No count means no approvals table to read (an older store): the page shows the run without them.
      const runApprovals =
        approvals && shown.approvals?.pending !== null
          ? await approvals.list({ jobId, limit: RUN_APPROVALS_LIMIT })
          : undefined;
      send(
        res,
        200,
        runPage(buildTimeline(loaded.run, loaded.steps, loaded.children), {
          approvals: runApprovals,
          nav: shown,
        }),
      );
    } catch (error) {
      storeFailed(res, error);
    }
  });

  router.get('/batches/:batchId', async (req: Request<{ batchId: string }>, res: Response) => {
    const { batchId } = req.params;
    try {
      const loaded = batchId.length > ID_MAX ? null : await store.loadBatch(batchId);
      if (loaded === null)
        return problem(
          res,
          404,
          'No such batch',
          `no batch ${batchId} in agent_batches${store.notFoundNote}`,
        );
      const { emails, approvals: asked } = loaded;
      const report = buildBatchReport(loaded.batch, loaded.runs, { emails, approvals: asked });
      send(res, 200, batchPage(report, await nav()));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  // Read only: forgetting a note takes npm run memory or the API, whose token names who asked.
  router.get('/notes', async (req: Request, res: Response) => {
    const raw = req.query as Record<string, unknown>;
    // A form's empty field is no filter (so the notes of tasks without a tenant are listed with the others).
    const given = Object.fromEntries(
      ['agent', 'tenant'].flatMap((name) =>
        raw[name] === undefined || raw[name] === '' ? [] : [[name, raw[name]]],
      ),
    );
    const parsed = noteListQuerySchema.safeParse(given);
    try {
      if (!parsed.success) {
        const message = parsed.error.issues
          .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
          .join('; ');
        return send(res, 400, notesPage({ notes: [], raw, problem: message, nav: await nav() }));
      }
      const notes = await store.listNotes({ ...parsed.data, limit: NOTES_PAGE_LIMIT });
      send(res, 200, notesPage({ notes, raw, nav: await nav() }));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  if (approvals) router.use('/approvals', approvalRoutes(store, approvals));

  return router;
}
