// The console's approvals: GET / lists them (any login), POST /:id decides one (an approver's login only; the
// board lets no other login's POST through, and this checks again). Mounted at /console/approvals. A decision
// goes through the approval desk, recorded as `console:<login>`, and answers as a form post should: 303 back to
// the list, or a page saying why not (400 naming the field, 404, 409 with the first decision).
import express, { Router, type Request, type Response } from 'express';
import {
  approvalQueryString,
  deskFilterOf,
  parseApprovalQuery,
  queryFromBack,
  type ApprovalQuery,
} from './approval-query.js';
import type { ConsoleDesk } from './console-desk.js';
import { consoleLoginOf, decidedByOf } from './console-login.js';
import { navOf } from './console-nav.js';
import type { ConsoleStore } from './console-store.js';
import { draftOf, parseDecisionForm } from './decision-form.js';
import { approvalsPage } from './pages/approvals-page.js';
import { alreadyDecidedPage, decisionRefusedPage } from './pages/decision-pages.js';
import { CONSOLE_PATH } from './pages/layout.js';
import { problem, send, storeFailed } from './respond.js';

/** agent_approvals.id is VARCHAR(40): anything longer names nothing. */
const APPROVAL_ID_MAX = 40;
/** A form's body: a reason and a textarea of arguments (ARGUMENTS_EDIT_MAX), with room for their encoding. */
const FORM_LIMIT = '256kb';

export function approvalRoutes(store: ConsoleStore, desk: ConsoleDesk): Router {
  const router = Router();

  router.get('/', async (req: Request, res: Response) => {
    const raw = req.query as Record<string, unknown>;
    const login = consoleLoginOf(res);
    try {
      const nav = await navOf(store, true);
      const parsed = parseApprovalQuery(raw);
      if (!parsed.ok) {
        const view = { approvals: [], query: { state: 'pending' as const }, raw, login, nav };
        return send(res, 400, approvalsPage({ ...view, problem: parsed.message }));
      }
      const approvals = await desk.list(deskFilterOf(parsed.query));
      const decidedId = raw['decided'];
      const decided =
        typeof decidedId === 'string' && decidedId.length <= APPROVAL_ID_MAX
          ? await desk.get(decidedId)
          : null;
      send(res, 200, approvalsPage({ approvals, query: parsed.query, raw, login, decided, nav }));
    } catch (error) {
      storeFailed(res, error);
    }
  });

  router.post(
    '/:id',
    express.urlencoded({ extended: false, limit: FORM_LIMIT }),
    async (req: Request<{ id: string }>, res: Response) => {
      const login = consoleLoginOf(res);
      if (!login?.mayDecide) {
        const message = `${login?.name ?? 'this login'} can see approvals but not decide them`;
        return problem(res, 403, 'Not an approver', message);
      }
      const { id } = req.params;
      const body = (req.body ?? {}) as Record<string, unknown>;
      const back: ApprovalQuery = queryFromBack(body['back']);
      const backString = approvalQueryString(back);
      try {
        const nav = await navOf(store, true);
        const approval = id.length > APPROVAL_ID_MAX ? null : await desk.get(id);
        if (approval === null) return problem(res, 404, 'No such approval', `no approval ${id}`, nav);
        if (approval.state !== 'pending')
          return send(res, 409, alreadyDecidedPage(approval, backString, nav));
        const form = { back: backString, draft: draftOf(body) };
        const parsed = parseDecisionForm(body, approval);
        if (!parsed.ok) return send(res, 400, decisionRefusedPage(approval, parsed.issues, form, nav));
        const outcome = await desk.decide(id, { ...parsed.input, by: decidedByOf(login) });
        switch (outcome.kind) {
          case 'decided':
            return res.redirect(
              303,
              `${CONSOLE_PATH}/approvals?${approvalQueryString(back, { decided: id })}`,
            );
          case 'conflict':
            return send(res, 409, alreadyDecidedPage(outcome.approval, backString, nav));
          case 'not_found':
            return problem(res, 404, 'No such approval', `no approval ${id}`, nav);
          case 'invalid':
            return send(res, 400, decisionRefusedPage(approval, outcome.issues, form, nav));
        }
      } catch (error) {
        storeFailed(res, error);
      }
    },
  );

  return router;
}
