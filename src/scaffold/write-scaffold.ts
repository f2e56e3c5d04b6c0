// `agent-fleet init [DIR]`: a service's first fleet, written from the templates next to this file (copied to
// dist/ by the build). It never overwrites: every target is checked before anything is written, so a refusal
// leaves the folder as it was and names the file in the way.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const TEMPLATES = new URL('./templates/', import.meta.url);

/** File written → template it is copied from. */
const FILES: Record<string, string> = {
  'agent-fleet.config.js': 'agent-fleet.config.js',
  'greeter.test.js': 'greeter.test.js',
  '.env.example': 'env.example',
};

/** A folder with no package.json gets one: ES modules (the templates use import) and the two commands. */
function packageJson(name: string): string {
  const manifest = {
    name:
      name
        .toLowerCase()
        .replace(/[^a-z0-9-]+/g, '-')
        .replace(/^-+|-+$/g, '') || 'my-fleet',
    private: true,
    type: 'module',
    scripts: { test: 'node --test', worker: 'agent-fleet worker --config ./agent-fleet.config.js' },
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

export class ScaffoldRefused extends Error {
  override readonly name = 'ScaffoldRefused';
}

export interface Scaffolded {
  written: string[];
  /** Said to the user: what to do next, and a package.json that is not ESM. */
  notes: string[];
}

/** Writes the scaffold into `dir` (created if missing); throws ScaffoldRefused naming any file that exists. */
export function writeScaffold(dir: string, cwd = process.cwd()): Scaffolded {
  const hasManifest = existsSync(join(dir, 'package.json'));
  const targets = Object.keys(FILES).concat(hasManifest ? [] : ['package.json']);
  const existing = targets.filter((file) => existsSync(join(dir, file)));
  if (existing.length > 0) {
    const shown = existing.map((file) => relative(cwd, join(dir, file)) || file).join(', ');
    throw new ScaffoldRefused(
      `${shown} already exist${existing.length === 1 ? 's' : ''}: nothing was written (move ${existing.length === 1 ? 'it' : 'them'} away, or init another folder)`,
    );
  }
  mkdirSync(dir, { recursive: true });
  for (const [file, template] of Object.entries(FILES)) {
    writeFileSync(join(dir, file), readFileSync(new URL(template, TEMPLATES)), { flag: 'wx' });
  }
  const notes: string[] = [];
  if (hasManifest) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string };
    if (manifest.type !== 'module')
      notes.push('package.json has no "type": "module": add it, or the .js files cannot use import');
  } else {
    const name = relative(join(dir, '..'), dir) || 'my-fleet';
    writeFileSync(join(dir, 'package.json'), packageJson(name), { flag: 'wx' });
  }
  return { written: targets, notes };
}
