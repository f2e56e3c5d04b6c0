import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real servers; two cores, so keep the pool small.
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
    // `vitest run` runs both projects once; `vitest run test/unit` (npm run test:unit) only the first.
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Unit tests need no Redis, MariaDB or SMTP: reaching one fails the test.
          setupFiles: ['./test/support/no-services.ts'],
        },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'] },
      },
    ],
  },
});
