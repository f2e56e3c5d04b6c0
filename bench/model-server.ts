// A child process serving the scripted model (src/testing/scripted-model-server.ts) for the benchmark, so
// its CPU is not the measured process's. Spawned with an IPC channel by bench/run.ts:
//   env BENCH_MODEL_LATENCY_MS (default 0), BENCH_TOOL (default bench_lookup), BENCH_MODEL=real-tools (the
//   real-tools scenario's script, bench/lib/real-tools-model.ts), BENCH_MODEL=children (the children
//   scenario's, bench/lib/children-model.ts), BENCH_MODEL=reference (the demo's reference model,
//   src/demo/reference-model.ts, shaped as the default model is: the notes-memory scenario)
//   → { type: 'ready', baseURL }            once listening
//   ← { type: 'requests', from }            → { type: 'requests', bodies, usages, total, failures }
//                                              (usages: the server's own accounting of each call, or null)
//   ← { type: 'timeline', from }            → { type: 'timeline', entries: [{ task, receivedAt }] }
// It exits when the parent goes away.
import { demoModelShape } from '../src/demo/demo-model-shape.js';
import { referenceModelRules } from '../src/demo/reference-model.js';
import { DEFAULT_MODEL } from '../src/kernel/defaults.js';
import { priceOf } from '../src/llm/price-table.js';
import { startScriptedModel } from '../src/testing/scripted-model-server.js';
import { childrenModel, CHILDREN_MODEL } from './lib/children-model.js';
import { realToolsModel, REAL_TOOLS_MODEL } from './lib/real-tools-model.js';
import { benchStepsModel, DEFAULT_BENCH_TOOL } from './lib/steps-model.js';

interface Query {
  type: 'requests' | 'timeline';
  from: number;
}

const latencyMs = Number(process.env.BENCH_MODEL_LATENCY_MS ?? '0');
const tool = process.env.BENCH_TOOL || DEFAULT_BENCH_TOOL;
const REFERENCE_MODEL = 'reference';
const reference = process.env.BENCH_MODEL === REFERENCE_MODEL;
const rule = reference
  ? referenceModelRules[0]!
  : process.env.BENCH_MODEL === REAL_TOOLS_MODEL
    ? realToolsModel
    : process.env.BENCH_MODEL === CHILDREN_MODEL
      ? childrenModel
      : benchStepsModel(tool);
const server = await startScriptedModel({
  rules: [rule],
  latencyMs,
  ...(reference ? demoModelShape(priceOf(DEFAULT_MODEL)) : {}),
});

if (!process.send) {
  process.stderr.write(`model-server: no IPC channel; listening on ${server.baseURL}\n`);
} else {
  process.send({ type: 'ready', baseURL: server.baseURL });
  process.on('message', (message: Query) => {
    if (message.type === 'timeline') {
      const entries = server.requests
        .slice(message.from)
        .map((r) => ({ task: String(r.messages[1]?.content ?? ''), receivedAt: r.receivedAt }));
      process.send?.({ type: 'timeline', entries });
      return;
    }
    if (message.type !== 'requests') return;
    process.send?.({
      type: 'requests',
      bodies: server.requests.slice(message.from).map((r) => r.body as unknown),
      usages: server.requests.slice(message.from).map((r) => r.usage ?? null),
      total: server.requests.length,
      failures: server.failures,
    });
  });
  process.on('disconnect', () => {
    void server.close().finally(() => process.exit(0));
  });
}
