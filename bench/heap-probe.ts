// Optional preload for a benchmarked worker process (`node --expose-gc --import tsx --import
// ./bench/heap-probe.ts workers/agent-worker.ts`), so the worker's own heap and event loop can be read without
// touching production code. With BENCH_HEAP_FILE set it appends one JSON line to that file:
//   every 250 ms   {"kind":"tick", ...process.memoryUsage(), elu, delay...}: the event loop's utilization
//                  and timer delay (mean, p99, max in ms) over the last 250 ms
//   on SIGUSR2     {"kind":"gc", "seq": n, ...} after a full garbage collection (needs --expose-gc), so the
//                  benchmark can read the live heap at a moment it chooses
// Without BENCH_HEAP_FILE it does nothing.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

const file = process.env.BENCH_HEAP_FILE;
if (file) {
  let seq = 0;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let lastElu = performance.eventLoopUtilization();
  const write = (kind: 'tick' | 'gc' | 'nogc'): void => {
    const m = process.memoryUsage();
    const line: Record<string, number | string> = {
      t: Date.now(),
      kind,
      seq,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      rss: m.rss,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
    };
    if (kind === 'tick') {
      const elu = performance.eventLoopUtilization();
      line.elu = performance.eventLoopUtilization(elu, lastElu).utilization;
      lastElu = elu;
      line.delayMeanMs = delay.mean / 1e6;
      line.delayP99Ms = delay.percentile(99) / 1e6;
      line.delayMaxMs = delay.max / 1e6;
      delay.reset();
    }
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  };
  setInterval(() => write('tick'), 250).unref();
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    seq++;
    if (gc) {
      gc();
      gc();
    }
    write(gc ? 'gc' : 'nogc');
  });
}
