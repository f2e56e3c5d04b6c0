// Who spent a profile's sample, by the frames on its stack: the component of the leaf-most frame that is the
// fleet's code or a package (node's own internals count for the frame that called them). Shared by the V8 profile
// (cpu-profile.ts) and the on-CPU one from perf (perf-profile.ts).

export const SRC = /\/(src|bench|workers)\/(.+?\.ts)/;
export const MODULE = /node_modules\/((?:@[^/]+\/)?[^/]+)/;

/** The fleet's own source file of a frame, e.g. `tools/data-database.ts`, or undefined. */
export function ownFile(url: string): string | undefined {
  if (url.includes('node_modules')) return undefined;
  const match = SRC.exec(url);
  return match ? `${match[1]}/${match[2]}` : undefined;
}

export function componentOfFile(file: string): string {
  if (file.startsWith('src/kernel/')) return 'kernel (src/kernel)';
  if (/src\/tools\/(sql-|data-database|stream-rows|render-rows)/.test(file))
    return 'SQL tools (guard, data database)';
  if (/src\/tools\/(send-email|email-|smtp-|delivery-)/.test(file)) return 'send_email (tool, ledger)';
  if (/src\/tools\//.test(file)) return 'tool plumbing (src/tools)';
  if (/src\/worker\/(trace-writer|run-journal)/.test(file)) return 'trace writes';
  if (/src\/store\//.test(file)) return 'store (src/store)';
  if (/src\/llm\//.test(file)) return 'model client (src/llm)';
  if (/src\/(queue|fleet)\//.test(file)) return 'queue / fleet helpers';
  if (/src\/worker\//.test(file)) return 'worker (task processor, checkpoints, results)';
  if (/src\/logging\//.test(file)) return 'logging';
  return `other fleet code (${file.split('/').slice(0, 2).join('/')})`;
}

export function componentOfPackage(pkg: string, caller: string | undefined): string {
  if (pkg === 'bullmq') return 'BullMQ';
  if (pkg === 'ioredis' || pkg === '@ioredis/commands' || pkg === 'redis-parser' || pkg === 'redis-errors')
    return 'Redis client (ioredis)';
  if (pkg === 'mysql2' || pkg === 'sqlstring' || pkg === 'iconv-lite' || pkg === 'lru.min') {
    if (caller && /src\/tools\/(data-database|stream-rows|sql-)|bench\/real-tools-floor/.test(caller))
      return 'mysql2: data database';
    if (caller && /src\/tools\/(email-|send-email|effect-)/.test(caller)) return 'mysql2: ledger writes';
    return 'mysql2: store writes (runs, traces)';
  }
  if (pkg === 'nodemailer') return 'nodemailer (SMTP)';
  if (pkg === 'openai') return 'openai client';
  if (pkg === 'node-sql-parser') return 'SQL guard parse (node-sql-parser)';
  if (pkg === 'zod') return `zod (called by ${caller ? componentOfFile(caller) : 'packages'})`;
  if (pkg === 'pino' || pkg === 'pino-std-serializers' || pkg === 'sonic-boom') return 'logging';
  if (pkg === 'tsx' || pkg === 'esbuild' || pkg === 'get-tsconfig') return 'tsx loader';
  return `package ${pkg}`;
}
