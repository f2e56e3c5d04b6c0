// Every Lua script says, before its first line of code, what its KEYS and ARGV are (as bullmq's scripts do): a
// script is called with positional arguments, and its header is the only place that names them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function luaFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return luaFiles(path);
    return entry.name.endsWith('.lua') ? [path] : [];
  });
}

describe('Lua scripts', () => {
  const files = luaFiles('src');

  it.each(files)('%s names its KEYS and ARGV in its header', (file) => {
    const lines = readFileSync(file, 'utf8').split('\n');
    const header = lines
      .slice(
        0,
        lines.findIndex((line) => !line.startsWith('--')),
      )
      .join('\n');
    expect(header, `${file} starts with a comment`).not.toBe('');
    expect(header).toMatch(/KEYS|K\[/);
    expect(header).toMatch(/ARGV|A\[/);
  });

  it('are all found', () => {
    expect(files.length).toBeGreaterThanOrEqual(14);
  });
});
