// The layers' import arrows, as `npm run lint` enforces them (eslint.config.js, scripts/import-layers.js): the
// kernel imports no adapter and does no I/O; production code never imports the demo or the test kit; no adapter
// imports the worker.
import { readdirSync } from 'node:fs';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// Only the layers' rule runs: the whole config over all of src took 15 s idle and over 30 s on a loaded machine.
const eslint = new ESLint({
  cwd: process.cwd(),
  ruleFilter: ({ ruleId }) => ruleId === '@typescript-eslint/no-restricted-imports',
});

async function restrictedImports(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
    .map((m) => m.message);
}

describe('import layers', () => {
  it('refuses an adapter, a config module or an I/O package in the kernel', async () => {
    for (const line of [
      "import { OpenAIChatModel } from '../llm/openai-chat-model.js';",
      "import type { RunsRepository } from '../store/runs-repository.js';",
      "import { readEnv } from '../../config/env.js';",
      "import { Queue } from 'bullmq';",
      "import { readFileSync } from 'node:fs';",
    ]) {
      expect(
        await restrictedImports(`${line}\nexport const x = 1;\n`, 'src/kernel/probe.ts'),
        line,
      ).toHaveLength(1);
    }
  });

  it('lets the kernel import itself, the pure helpers and its libraries', async () => {
    const code = [
      "import { z } from 'zod';",
      "import { createHash } from 'node:crypto';",
      "import type { Tool } from './tool.js';",
      "import { withTimeout } from '../util/with-timeout.js';",
      'export const x = [z, createHash, withTimeout] as unknown as Tool[];',
    ].join('\n');
    expect(await restrictedImports(code, 'src/kernel/probe.ts')).toEqual([]);
  });

  it('refuses the demo and the test kit in production code, and allows adapters the kernel', async () => {
    expect(
      await restrictedImports(
        "import { seedDemoDatabase } from '../demo/seed-demo-database.js';\n",
        'src/worker/probe.ts',
      ),
    ).toHaveLength(1);
    expect(
      await restrictedImports(
        "import { startScriptedModel } from '../testing/scripted-model-server.js';\n",
        'src/tools/probe.ts',
      ),
    ).toHaveLength(1);
    expect(
      await restrictedImports("import { runAgent } from '../kernel/run-agent.js';\n", 'src/worker/probe.ts'),
    ).toEqual([]);
  });

  it('refuses the worker in an adapter, and still the demo there; lets the worker import adapters', async () => {
    for (const [line, file] of [
      ["import type { WorkerServices } from '../worker/worker-services.js';", 'src/tools/probe.ts'],
      ["import { openFleet } from '../../worker/fleet-runtime.js';", 'src/tools/mcp/probe.ts'],
      ["import { startWorker } from '../worker.js';", 'src/effects/probe.ts'],
      ["import type { RunFinisher } from '../worker/run-finisher.js';", 'src/store/probe.ts'],
      ["import { seedDemoDatabase } from '../demo/seed-demo-database.js';", 'src/effects/probe.ts'],
    ]) {
      expect(await restrictedImports(`${line}\nexport const x = 1;\n`, file!), line).toHaveLength(1);
    }
    for (const line of [
      "import type { ToolServices } from '../tools/tool-services.js';",
      "import { EffectLedger } from '../effects/effect-ledger.js';",
    ]) {
      expect(await restrictedImports(`${line}\nexport const x = 1;\n`, 'src/worker/probe.ts'), line).toEqual(
        [],
      );
    }
    expect(
      await restrictedImports(
        "import { EffectLedger } from '../effects/effect-ledger.js';\nexport const x = 1;\n",
        'src/tools/probe.ts',
      ),
    ).toEqual([]);
  });

  it('refuses the effects folder in the kernel', async () => {
    expect(
      await restrictedImports(
        "import { runOnce } from '../effects/effect-once.js';\nexport const x = 1;\n",
        'src/kernel/probe.ts',
      ),
    ).toHaveLength(1);
  });

  it('holds for the repository as it is', async () => {
    const results = await eslint.lintFiles(['src/**/*.ts']);
    const broken = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
        .map((m) => `${r.filePath}:${m.line} ${m.message}`),
    );
    expect(broken).toEqual([]);
  });

  it('names every folder of src as an adapter but the kernel and its pure helpers', async () => {
    // A path in a variable: the rules are plain JavaScript without types (eslint.config.js reads them too).
    const rules = '../../../scripts/import-layers.js';
    const { ADAPTER_FOLDERS } = (await import(rules)) as { ADAPTER_FOLDERS: string[] };
    const folders = readdirSync('src', { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !['kernel', 'util'].includes(folder)).sort()).toEqual(
      [...ADAPTER_FOLDERS].sort(),
    );
  });
});
