// `npm run build`: the packages another service installs (docs/installing.md). The whole project compiles to
// dist/ (bin, client, worker, kernel, testing entries and every process), the files it reads at run time next
// to the code (every non-TypeScript file under src/ and config/: migrations, Lua scripts, prices), and the client
// package (packages/client) compiles the client entry alone, with the files its modules read. dist/ is rebuilt from nothing each time, so a
// removed source never survives in a package.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(import.meta.dirname, '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** Read by the code at run time, found next to it (src/store/migrations/*.sql, config/*.json, …). */
const ASSET_DIRECTORIES = ['src', 'config'];

async function tsc(project: string): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, [TSC, '-p', join(ROOT, project)], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    process.stderr.write(`${stdout}${stderr}`);
    throw new Error(`tsc -p ${project} failed`);
  }
}

function* filesUnder(directory: string): Generator<string> {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else yield path;
  }
}

/** Copies the assets into `outDir`; with `besideCode`, only those whose folder there holds compiled code. */
function copyAssets(outDir: string, besideCode = false): number {
  let copied = 0;
  for (const directory of ASSET_DIRECTORIES) {
    for (const file of filesUnder(join(ROOT, directory))) {
      if (file.endsWith('.ts')) continue;
      const target = join(outDir, relative(ROOT, file));
      if (besideCode && !existsSync(dirname(target))) continue;
      cpSync(file, target, { force: true });
      copied++;
    }
  }
  return copied;
}

// `tsx scripts/build.ts client` (the client package's own build, run by its prepack): that package alone, so
// `npm pack` in packages/client ships the files its modules read too.
const clientOnly = process.argv[2] === 'client';
const outDirs = clientOnly ? ['packages/client/dist'] : ['dist', 'packages/client/dist'];
for (const outDir of outDirs) rmSync(join(ROOT, outDir), { recursive: true, force: true });
// Two programs, one per package: compiled side by side.
await Promise.all([
  ...(clientOnly ? [] : [tsc('tsconfig.build.json')]),
  tsc('packages/client/tsconfig.json'),
]);
const assets = clientOnly ? 0 : copyAssets(join(ROOT, 'dist'));
// The client package runs some of the same modules (the spend ledger's scripts for a batch's caps).
const clientAssets = copyAssets(join(ROOT, 'packages/client/dist'), true);
process.stdout.write(
  clientOnly
    ? `built packages/client/dist/ (${clientAssets} assets)\n`
    : `built dist/ (${assets} assets) and packages/client/dist/ (${clientAssets} assets)\n`,
);
