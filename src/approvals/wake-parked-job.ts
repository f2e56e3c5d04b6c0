// Wakes a task job parked for approvals: a parked job waits in BullMQ's `delayed` state (no worker slot) until its
// earliest expiry, and a decision brings it back now. BullMQ's promote is one atomic script that moves the job
// from delayed to wait only if it is still delayed (else it answers "not in the delayed state", code -3), so a
// job that woke meanwhile (its expiry came, another decision promoted it, a worker took it) is left alone.
import type { Queue } from 'bullmq';

/** bullmq's ErrorCode.JobNotInState (finished-errors.js): promote found the job no longer delayed. */
const JOB_NOT_IN_STATE = -3;

/** Whether this call moved the job from delayed to wait; false when it was not delayed or does not exist. */
export async function wakeParkedJob(queue: Queue, jobId: string): Promise<boolean> {
  const job = await queue.getJob(jobId);
  if (!job) return false;
  try {
    await job.promote();
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === JOB_NOT_IN_STATE) return false;
    throw error;
  }
}
