// `agent-fleet init`'s writer: the scaffold's files in a new or existing folder, a package.json only where there
// is none, and a refusal that names the file in the way and writes nothing. Pure: a temporary folder only.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ScaffoldRefused, writeScaffold } from '../../../src/scaffold/write-scaffold.js';

const root = mkdtempSync(join(tmpdir(), 'af-init-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('writeScaffold', () => {
  it('writes a configuration, its test, .env.example and an ESM package.json into a new folder', () => {
    const dir = join(root, 'My Fleet');
    const { written, notes } = writeScaffold(dir, root);
    expect(written).toEqual(['agent-fleet.config.js', 'greeter.test.js', '.env.example', 'package.json']);
    expect(readdirSync(dir).sort()).toEqual(written.slice().sort());
    expect(notes).toEqual([]);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({
      name: 'my-fleet',
      type: 'module',
      scripts: { test: 'node --test' },
    });
    const config = readFileSync(join(dir, 'agent-fleet.config.js'), 'utf8');
    expect(config).toMatch(/from 'agent-fleet\/kernel'/);
    expect(config.match(/defineAgent\(/g)).toHaveLength(1);
    expect(config.match(/defineTool\(/g)).toHaveLength(1);
    expect(readFileSync(join(dir, 'greeter.test.js'), 'utf8')).toMatch(/startScriptedModel/);
    for (const name of ['REDIS_URL', 'MYSQL_URL', 'OPENAI_API_KEY', 'FLEET_CONFIG'])
      expect(readFileSync(join(dir, '.env.example'), 'utf8')).toMatch(new RegExp(`^#? ?${name}=`, 'm'));
  });

  it("keeps a folder's own package.json, and says when it is not ESM", () => {
    const dir = join(root, 'service');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), '{"name":"service"}');
    const { written, notes } = writeScaffold(dir, root);
    expect(written).not.toContain('package.json');
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe('{"name":"service"}');
    expect(notes).toEqual([
      'package.json has no "type": "module": add it, or the .js files cannot use import',
    ]);
  });

  it('overwrites nothing: a file in the way is named and nothing is written', () => {
    const dir = join(root, 'taken');
    mkdirSync(dir);
    writeFileSync(join(dir, 'greeter.test.js'), 'mine');
    expect(() => writeScaffold(dir, root)).toThrow(ScaffoldRefused);
    expect(() => writeScaffold(dir, root)).toThrow(
      'taken/greeter.test.js already exists: nothing was written (move it away, or init another folder)',
    );
    expect(readdirSync(dir)).toEqual(['greeter.test.js']);
    expect(readFileSync(join(dir, 'greeter.test.js'), 'utf8')).toBe('mine');
    expect(existsSync(join(dir, 'agent-fleet.config.js'))).toBe(false);
  });
});
