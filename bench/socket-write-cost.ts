// `npx tsx bench/socket-write-cost.ts`: what one write to a local TCP socket costs this machine's CPU, the
// reader (in the same process) included, by size. V8's profiler files a thread descheduled inside such a write
// under `writeBuffer`/`writev`; this says how much of that is CPU (docs/benchmarks.md, scenario 7). Prints only.
import net from 'node:net';

const WRITES = 5_000;
const SIZES = [100, 1_000, 3_500, 10_000];

const server = net.createServer((socket) => socket.on('data', () => {})).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as net.AddressInfo;
const socket = net.connect(port, '127.0.0.1');
await new Promise((resolve) => socket.once('connect', resolve));

// Each size twice, the first round a warm-up.
for (const round of [1, 2]) {
  for (const size of SIZES) {
    const chunk = Buffer.alloc(size, 97);
    const before = process.cpuUsage();
    for (let i = 0; i < WRITES; i++) {
      socket.write(chunk);
      // Let the reader run now and then, as a process serving requests would.
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const used = process.cpuUsage(before);
    if (round === 2) {
      const us = (used.user + used.system) / WRITES;
      console.log(
        `${String(size).padStart(6)} bytes: ${us.toFixed(1)} µs of CPU a write (${(used.system / WRITES).toFixed(1)} in the kernel)`,
      );
    }
  }
}
socket.destroy();
server.close();
