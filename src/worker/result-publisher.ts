// Publishes a result (CONTRACT §4) on agent-results exactly once: the result job's id derives from the task's,
// and BullMQ ignores an add whose id already exists, so a retried or resumed job can publish again safely.
import type { Queue } from 'bullmq';
import type { AgentResult } from '../agent/types.js';
import { RESULT_JOB_NAME, resultJobId } from '../queue/names.js';

export class ResultPublisher {
  constructor(private readonly results: Queue) {}

  async publish(result: AgentResult): Promise<void> {
    await this.results.add(RESULT_JOB_NAME, result, { jobId: resultJobId(result.jobId) });
  }
}
