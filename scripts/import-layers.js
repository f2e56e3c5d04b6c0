// The import arrows `npm run lint` enforces (docs/architecture.md). The kernel (src/kernel) is the loop and its
// ports: it imports only itself, the pure helpers of src/util, zod, jsonrepair, gpt-tokenizer and node:crypto /
// node:module, so it runs anywhere and every adapter depends on it, never the reverse. Production code (the rest
// of src/) never imports the demo or the test kit. The worker wires the adapters together, so no adapter imports
// it: what a tool needs of the process is a port the tools own (src/tools/tool-services.ts).

/** Folders of src/ that are adapters or applications, which the kernel must not reach. */
export const ADAPTER_FOLDERS = [
  'approvals',
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
  'notes',
  'queue',
  'reports',
  'scaffold',
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

const notDemoOrTestKit = {
  group: ['**/demo/*', '**/testing/*', '**/testing.js'],
  message: 'Production code never imports the demo or the test kit (the entry scripts wire the demo in).',
};

export const productionImportRule = ['error', { patterns: [notDemoOrTestKit] }];

/** Adapters held to the worker rule: all but the worker itself, the demo (an app) and the test kit. */
export const WORKER_FREE_FOLDERS = ADAPTER_FOLDERS.filter(
  (folder) => !['worker', 'demo', 'testing'].includes(folder),
);

export const adapterImportRule = [
  'error',
  {
    patterns: [
      notDemoOrTestKit,
      {
        group: ['**/worker/*', '**/worker.js'],
        message:
          'An adapter never imports the worker: put what it needs behind a port it owns (src/tools/tool-services.ts) and let the worker implement it.',
      },
    ],
  },
];
