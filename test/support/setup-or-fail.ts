// A set-up that fails the tests instead of skipping them: vitest reports the tests of a file whose beforeAll
// threw as skipped, and a fault scenario without Redis or MariaDB must be a failure, never a skip.
import { beforeAll, beforeEach } from 'vitest';

export function setupOrFail(setup: () => Promise<void>, timeoutMs = 120_000): void {
  let failure: { error: unknown } | undefined;
  beforeAll(async () => {
    try {
      await setup();
    } catch (error) {
      failure = { error };
    }
  }, timeoutMs);
  beforeEach(() => {
    if (failure) throw failure.error;
  });
}
