import { configDefaults, defineConfig } from 'vitest/config';

/** The tests that drive Debian's chromium: their own project, so only they need it. */
const BROWSER_TESTS = [
  'test/integration/console/browser.test.ts',
  'test/integration/console/approvals-browser.test.ts',
];
/** Checks Redis and MariaDB once before the project's tests, and for the browser project installs chromium. */
const MACHINE_SETUP = ['./test/support/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real servers; two cores, so keep the pool small.
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
    // `vitest run` (npm test) runs every project once; `--project unit` (npm run test:unit) only the first,
    // without the machine set-up.
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
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...BROWSER_TESTS],
          globalSetup: MACHINE_SETUP,
        },
      },
      {
        extends: true,
        test: { name: 'browser', include: BROWSER_TESTS, globalSetup: MACHINE_SETUP },
      },
    ],
  },
});
