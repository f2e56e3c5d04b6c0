// Which fleet configuration a worker serves: FLEET_CONFIG, else agent-fleet.config.* in the working directory,
// else the built-in one; a module that exports no fleet, or fails to load, is one clear ConfigError.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../config/env.js';
import { loadFleetConfig } from '../src/worker/fleet-config.js';

const KERNEL = join(import.meta.dirname, '..', 'src', 'kernel.ts');
const options = {};
const made: string[] = [];

afterAll(() => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

function directoryWith(files: Record<string, string>): string {
  const directory = mkdtempSync(join(tmpdir(), 'af-fleet-config-'));
  made.push(directory);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(directory, name), text);
  return directory;
}

const AGENT = (name: string) =>
  `import { defineAgent, defineFleet } from ${JSON.stringify(KERNEL)};\n` +
  `export const agent = defineAgent({ name: ${JSON.stringify(name)}, description: 'd', tools: [] });\n`;

describe('loadFleetConfig', () => {
  it('serves the built-in configuration (the default agent) when there is no module', async () => {
    const loaded = await loadFleetConfig(parseEnv({}), { ...options, cwd: directoryWith({}) });
    expect(loaded.source).toBeUndefined();
    expect([...loaded.fleet.agents.keys()]).toEqual(['default']);
    expect(loaded.fleet.sources.flatMap((s) => s.names)).toEqual([
      'sql_query',
      'list_tables',
      'describe_table',
      'send_email',
    ]);
  });

  it('finds agent-fleet.config.ts in the working directory', async () => {
    const cwd = directoryWith({
      'agent-fleet.config.ts': `${AGENT('found')}export default defineFleet({ agents: [agent] });\n`,
    });
    const loaded = await loadFleetConfig(parseEnv({}), { ...options, cwd });
    expect(loaded.source).toBe(join(cwd, 'agent-fleet.config.ts'));
    expect([...loaded.fleet.agents.keys()]).toEqual(['found']);
  });

  it('prefers FLEET_CONFIG, and takes a plain definition exported as `fleet`', async () => {
    const cwd = directoryWith({
      'agent-fleet.config.ts': `${AGENT('ignored')}export default defineFleet({ agents: [agent] });\n`,
      'mine.ts': `${AGENT('mine')}export const fleet = { agents: [agent] };\n`,
    });
    const loaded = await loadFleetConfig(parseEnv({ FLEET_CONFIG: 'mine.ts' }), { ...options, cwd });
    expect([...loaded.fleet.agents.keys()]).toEqual(['mine']);
  });

  it('refuses a module that exports no fleet, or that cannot load, in one line', async () => {
    const cwd = directoryWith({
      'empty.ts': 'export const nothing = 1;\n',
      'broken.ts': "throw new Error('the KPI token is missing');\n",
    });
    await expect(
      loadFleetConfig(parseEnv({ FLEET_CONFIG: 'empty.ts' }), { ...options, cwd }),
    ).rejects.toThrow(/exports no fleet: export default defineFleet/);
    await expect(
      loadFleetConfig(parseEnv({ FLEET_CONFIG: 'broken.ts' }), { ...options, cwd }),
    ).rejects.toThrow(/broken\.ts could not be loaded: the KPI token is missing$/);
  });
});
