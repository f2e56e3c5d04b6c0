// The floor of scenario 2 in a process of its own, measured like the worker is: a bare loop over OpenAIChatModel
// replaying the calls the worker made, so its figures carry none of the benchmark process's own state (its heap
// of results, its Redis connections). Spawned with an IPC channel by bench/scenarios/floor.ts:
//   env BENCH_MODEL_URL                              the scripted model's base URL
//   → { type: 'ready' }
//   ← { type: 'load', bodies }                       → { type: 'loaded' }
//   ← { type: 'replay', concurrency, callsPerSignal, transport }
//                                                    → { type: 'replayed', elapsedMs, cpuMs, reads, writes, errors }
// CPU is process.cpuUsage() (all threads) and system calls /proc/self/io, both around the replay alone.
import { syscallsOf } from './lib/proc.js';
import { Replayer, type Body, type Transport } from './lib/replay.js';

interface Command {
  type: 'load' | 'replay';
  bodies?: Body[];
  concurrency?: number;
  callsPerSignal?: number;
  transport?: Transport;
}

const baseURL = process.env.BENCH_MODEL_URL;
if (!baseURL || !process.send) {
  process.stderr.write('floor-client: needs BENCH_MODEL_URL and an IPC channel\n');
  process.exit(2);
}
const replayers = {
  'client-default': new Replayer(baseURL, 'client-default'),
  worker: new Replayer(baseURL, 'worker'),
};
let bodies: Body[] = [];

process.on('message', (command: Command) => {
  if (command.type === 'load') {
    bodies = command.bodies ?? [];
    process.send?.({ type: 'loaded' });
    return;
  }
  void (async () => {
    const io0 = syscallsOf('self');
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const replayer = replayers[command.transport ?? 'client-default'];
    const errors = await replayer.calls(bodies, command.concurrency ?? 1, command.callsPerSignal ?? 1);
    const elapsedMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const io1 = syscallsOf('self');
    process.send?.({
      type: 'replayed',
      elapsedMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      reads: io1.reads - io0.reads,
      writes: io1.writes - io0.writes,
      errors,
    });
  })();
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready' });
