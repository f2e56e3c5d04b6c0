// POST /v1/tasks/:jobId/cancel (docs/cancelling.md), behind the bearer check: who cancelled is the name of the token
// the request carried (bearer-auth.ts), as for approvals, never anything the request says. The route takes no body.
import type { RequestHandler } from 'express';
import type { FleetClient } from '../src/client/fleet-client.js';
import { callerOf } from './bearer-auth.js';

const MAX_JOB_ID_CHARS = 256;

/** 202 with the state the cancel found, 409 with the result of a task that had finished, 404 for an unknown one. */
export function cancelTaskRoute(client: Pick<FleetClient, 'cancelTask'>): RequestHandler {
  return async (req, res) => {
    const param: unknown = req.params['jobId'];
    const jobId = typeof param === 'string' ? param : '';
    if (jobId.length === 0 || jobId.length > MAX_JOB_ID_CHARS) {
      res.status(404).json({ error: 'not_found' });
      return;
    }
    const cancel = await client.cancelTask(jobId, { by: callerOf(res) });
    switch (cancel.outcome) {
      case 'unknown':
        res.status(404).json({ error: 'not_found' });
        return;
      case 'finished':
        res.status(409).json({ error: 'already_finished', state: cancel.state, result: cancel.result });
        return;
      case 'cancelling':
        res.status(202).json({ jobId, state: cancel.state, cancelling: true, children: cancel.children });
        return;
    }
  };
}
