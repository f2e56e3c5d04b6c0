// The approvals routes of the HTTP API (docs/http-api.md#approvals), mounted under /v1 behind the bearer check:
// list, read and decide the tool calls that wait for a person. Who decided is the name of the token the request
// carried (bearer-auth.ts), never anything in the body, which is strict: a `by` field is refused like any unknown
// field. Without a desk (no store configured) every route answers 503.
import express, { type Router } from 'express';
import { InvalidDecisionError, type ApprovalDesk } from '../src/approvals/approval-desk.js';
import {
  approvalQuerySchema,
  batchDecisionBodySchema,
  decisionBodySchema,
} from '../src/client/approval-schemas.js';
import { TASK_JSON_LIMITS } from '../src/queue/json-structure.js';
import { toFieldIssues } from '../src/queue/task-schema.js';
import { callerOf } from './bearer-auth.js';
import { BODY_LIMIT_BYTES, jsonBody, requireJson } from './json-body.js';

/** What the routes need of an ApprovalDesk: GET /v1/batches/:batchId also asks it for the batch's counts. */
export type ApprovalsDesk = Pick<ApprovalDesk, 'list' | 'get' | 'decide' | 'decideBatch' | 'countsForBatch'>;

const MAX_ID_CHARS = 256;
/** A path parameter that can name an approval or a batch (a longer one names none: 404). */
const validId = (id: unknown): id is string =>
  typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_CHARS;

export function approvalsRouter(desk: ApprovalsDesk | undefined): Router {
  const router = express.Router();
  if (!desk) {
    router.use(['/approvals', '/batches/:batchId/approvals'], (_req, res) => {
      res.status(503).json({ error: 'unavailable' });
    });
    return router;
  }
  // Edited arguments are a tool's arguments: the task's limits fit them.
  const body = jsonBody(BODY_LIMIT_BYTES, TASK_JSON_LIMITS);

  router.get('/approvals', async (req, res) => {
    const query = approvalQuerySchema.safeParse(req.query);
    if (!query.success) {
      res.status(400).json({ error: 'invalid_query', issues: toFieldIssues(query.error.issues) });
      return;
    }
    res.json({ approvals: await desk.list(query.data) });
  });

  router.get('/approvals/:id', async (req, res) => {
    const id = req.params['id'];
    const approval = validId(id) ? await desk.get(id) : null;
    if (!approval) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    res.json(approval);
  });

  router.post('/approvals/:id', requireJson, body, async (req, res) => {
    const id = req.params['id'];
    if (!validId(id)) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    const parsed = decisionBodySchema.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: 'invalid_decision', issues: toFieldIssues(parsed.error.issues) });
      return;
    }
    const outcome = await desk.decide(id, { ...parsed.data, by: callerOf(res) });
    switch (outcome.kind) {
      case 'decided':
        res.json(outcome.approval);
        return;
      case 'conflict':
        res.status(409).json({ error: 'already_decided', approval: outcome.approval });
        return;
      case 'not_found':
        res.status(404).json({ error: 'not_found' });
        return;
      case 'invalid':
        res.status(400).json({ error: 'invalid_decision', issues: outcome.issues });
        return;
    }
  });

  router.post('/batches/:batchId/approvals', requireJson, body, async (req, res) => {
    const batchId = req.params['batchId'];
    if (!validId(batchId)) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    const parsed = batchDecisionBodySchema.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: 'invalid_decision', issues: toFieldIssues(parsed.error.issues) });
      return;
    }
    try {
      const { decided, conflicts } = await desk.decideBatch({ ...parsed.data, batchId, by: callerOf(res) });
      res.json({ decided, conflicts });
    } catch (error) {
      if (!(error instanceof InvalidDecisionError)) throw error;
      res.status(400).json({ error: 'invalid_decision', issues: error.issues });
    }
  });

  return router;
}
