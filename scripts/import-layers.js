// The import arrows `npm run lint` enforces (docs/architecture.md). The kernel (src/kernel) is the loop and its
// ports: it imports only itself, the pure helpers of src/util, zod, jsonrepair, gpt-tokenizer and node:crypto /
// node:module, so it runs anywhere and every adapter depends on it, never the reverse. Production code (the rest
// of src/) never imports the demo or the test kit.

/** Folders of src/ that are adapters or applications, which the kernel must not reach. */
export const ADAPTER_FOLDERS = [
  'batch',
  'catalog',
  'client',
  'console',
  'demo',
  'effects',
  'fleet',
  'llm',
  'logging',
  'metrics',
  'queue',
  'reports',
  'schedules',
  'store',
  'telemetry',
  'testing',
  'tools',
  'worker',
];

/** Packages that do I/O or belong to an adapter. */
const IO_PACKAGES = [
  'bullmq',
  'ioredis',
  'mysql2',
  'mysql2/*',
  'openai',
  'openai/*',
  'express',
  'nodemailer',
  'smtp-server',
  'pino',
  '@bull-board/*',
  '@opentelemetry/*',
  '@modelcontextprotocol/*',
  'playwright-core',
];
const NODE_IO = ['fs', 'fs/*', 'net', 'http', 'https', 'child_process', 'dgram', 'tls', 'worker_threads'];

export const kernelImportRule = [
  'error',
  {
    patterns: [
      {
        group: [...ADAPTER_FOLDERS.map((folder) => `../${folder}/*`), '../../*', '../*.js'],
        message:
          'The kernel imports no adapter: define a port in src/kernel and let the adapter implement it.',
      },
      {
        group: [...IO_PACKAGES, ...NODE_IO, ...NODE_IO.map((name) => `node:${name}`)],
        message: 'The kernel does no I/O of its own: the model and the tools do it through their ports.',
      },
    ],
  },
];

export const productionImportRule = [
  'error',
  {
    patterns: [
      {
        group: ['**/demo/*', '**/testing/*', '**/testing.js'],
        message:
          'Production code never imports the demo or the test kit (the entry scripts wire the demo in).',
      },
    ],
  },
];
