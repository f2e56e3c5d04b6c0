// The store's own failures, so the worker can tell a database outage (retry the job later) from a schema
// problem that needs an operator (changed migration, lock never released).
import { AgentFleetError } from '../kernel/errors.js';

export class StoreError extends AgentFleetError {
  override readonly name = 'StoreError';
  readonly kind = 'system';
}
