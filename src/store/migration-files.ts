// Migration files on disk: `NNN_name.sql`, applied in version order. The checksum covers the text as written
// (line endings normalized, so a Windows checkout does not count as a change) and is how an edit to an
// already-applied migration is caught.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreError } from '../kernel/errors.js';

export interface Migration {
  version: number;
  name: string;
  file: string;
  checksum: string;
  statements: string[];
}

export const MIGRATIONS_DIRECTORY = fileURLToPath(new URL('./migrations/', import.meta.url));

const FILE_NAME = /^(\d+)_([A-Za-z0-9_-]+)\.sql$/;

export async function loadMigrations(directory: string = MIGRATIONS_DIRECTORY): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of await readdir(directory)) {
    if (!file.endsWith('.sql')) continue;
    const match = FILE_NAME.exec(file);
    if (!match?.[1] || !match[2]) {
      throw new StoreError(
        'migration_bad_file',
        `migration ${file}: name must look like 001_what_it_does.sql`,
      );
    }
    const text = (await readFile(join(directory, file), 'utf8')).replace(/\r\n/g, '\n');
    migrations.push({
      version: Number(match[1]),
      name: match[2],
      file,
      checksum: createHash('sha256').update(text).digest('hex'),
      statements: splitStatements(text),
    });
  }
  migrations.sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]?.version === migrations[i - 1]?.version) {
      throw new StoreError('migration_bad_file', `two migrations have version ${migrations[i]?.version}`);
    }
  }
  return migrations;
}

/**
 * Statements end with `;` at the end of a line; whole-line `--` comments are dropped first so a comment may
 * end with a semicolon. No procedures or triggers: their bodies contain `;` of their own.
 */
export function splitStatements(text: string): string[] {
  const code = text
    .split('\n')
    .filter((line) => !/^\s*--/.test(line))
    .join('\n');
  return code
    .split(/;[ \t]*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}
