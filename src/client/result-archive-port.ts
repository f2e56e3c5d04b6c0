// What the client asks when Redis no longer holds a job: an interface only, so the client (and its package) stays
// free of the store it is usually backed by (StoreResultArchive in result-archive.ts, over MySQL).
import type { AgentResult } from '../kernel/types.js';
import type { BatchSummary } from '../batch/batch-summary.js';

export interface ArchivedBatch {
  state: 'running' | 'completed';
  summary: BatchSummary | null;
  jobIds: string[];
}

export interface ResultArchive {
  getResult(jobId: string): Promise<AgentResult | null>;
  getBatch(batchId: string): Promise<ArchivedBatch | null>;
}
