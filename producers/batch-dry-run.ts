// `POST /v1/batches?dryRun=true`: the batch's forecast (docs/batches.md) instead of enqueuing it. Mounted before
// the enqueue handler of the route; without the parameter (or with dryRun=false) it hands the request on.
//   200 {"dryRun": true, "forecast": {...}} · 400 invalid_batch / invalid_query · 503 forecast_unavailable
import type { RequestHandler } from 'express';
import type { Logger } from '../src/logging/logger.js';
import { ForecastError, TaskValidationError, type FleetClient } from '../src/client/fleet-client.js';

const YES = new Set(['true', '1']);
const NO = new Set(['false', '0']);

export function batchDryRun(client: FleetClient, logger: Logger): RequestHandler {
  return async (req, res, next) => {
    const value = req.query['dryRun'];
    if (value === undefined || (typeof value === 'string' && NO.has(value))) return next();
    if (typeof value !== 'string' || !YES.has(value)) {
      res.status(400).json({
        error: 'invalid_query',
        issues: [{ path: 'dryRun', message: 'must be true or false (once)' }],
      });
      return;
    }
    try {
      const forecast = await client.forecastBatch(req.body);
      res.status(200).json({ dryRun: true, forecast });
    } catch (error) {
      if (error instanceof TaskValidationError) {
        res.status(400).json({ error: 'invalid_batch', issues: error.issues });
        return;
      }
      // No history source configured, or the store could not be read: nothing to forecast from, say so.
      const message = error instanceof Error ? error.message : String(error);
      logger.warn({ reason: message }, 'batch forecast unavailable');
      const shown =
        error instanceof ForecastError
          ? message
          : 'the run history (MYSQL_READ_URL when set, else MYSQL_URL) could not be read';
      res.status(503).json({ error: 'forecast_unavailable', message: shown });
    }
  };
}
