// `npm run build`: the packages another service installs (docs/installing.md). The whole project compiles to
// dist/ (bin, client, worker, kernel, testing entries and every process), the files it reads at run time next
// to the code (every non-TypeScript file under src/ and config/: migrations, Lua scripts, prices), and the client
// package (packages/client) compiles the client entry alone. dist/ is rebuilt from nothing each time, so a
// removed source never survives in a package.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** Read by the code at run time, found next to it (src/store/migrations/*.sql, config/*.json, …). */
const ASSET_DIRECTORIES = ['src', 'config'];

function tsc(project: string): void {
  execFileSync(process.execPath, [TSC, '-p', join(ROOT, project)], { stdio: 'inherit' });
}

function* filesUnder(directory: string): Generator<string> {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else yield path;
  }
}

function copyAssets(outDir: string): number {
  let copied = 0;
  for (const directory of ASSET_DIRECTORIES) {
    for (const file of filesUnder(join(ROOT, directory))) {
      if (file.endsWith('.ts')) continue;
      const target = join(outDir, relative(ROOT, file));
      cpSync(file, target, { force: true });
      copied++;
    }
  }
  return copied;
}

for (const outDir of ['dist', 'packages/client/dist'])
  rmSync(join(ROOT, outDir), { recursive: true, force: true });
tsc('tsconfig.build.json');
const assets = copyAssets(join(ROOT, 'dist'));
tsc('packages/client/tsconfig.json');
process.stdout.write(`built dist/ (${assets} assets) and packages/client/dist/\n`);
