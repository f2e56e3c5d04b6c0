// What a hostile batch body costs the API's event loop before it is refused (producers/http-api.ts, the
// structure limits of src/queue/json-structure.ts), and what a legitimate 5,000-task batch costs. Needs Redis;
// its queue prefix is deleted at the end. `npx tsx bench/body-structure.ts`
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino } from 'pino';
import { FleetClient } from '../src/client/fleet-client.js';
import { createApiServer } from '../producers/http-api.js';
import { deleteKeysWithPrefix } from '../src/queue/delete-prefix.js';
import { createRedis } from '../src/queue/redis.js';

const TOKEN = 'measure-token-0123456789';
const PREFIX = `bench-body-${process.pid}`;
const client = new FleetClient({ prefix: PREFIX });
const app = createApiServer({ client, token: TOKEN, logger: pino({ level: 'silent' }) });
const server = createServer(app);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const shapes: Record<string, () => string> = {
  'one metadata object, 700k keys': () => {
    const keys: string[] = [];
    for (let i = 0; i < 700_000; i++) keys.push(`"k${i}":1`);
    return `{"tasks":[{"task":"x","metadata":{${keys.join(',')}}}]}`;
  },
  'top-level 700k unknown keys': () => {
    const keys: string[] = [];
    for (let i = 0; i < 700_000; i++) keys.push(`"k${i}":1`);
    return `{"tasks":[{"task":"x"}],${keys.join(',')}}`;
  },
  'one metadata object, 199,990 keys': () => {
    const keys: string[] = [];
    for (let i = 0; i < 199_990; i++) keys.push(`"k${i}":1`);
    return `{"tasks":[{"task":"x","metadata":{${keys.join(',')}}}]}`;
  },
  '2000 tasks x 95 metadata keys (just under the limits)': () => {
    const tasks: string[] = [];
    for (let t = 0; t < 2000; t++) {
      const keys: string[] = [];
      for (let i = 0; i < 95; i++) keys.push(`"k${i}":1`);
      tasks.push(`{"task":"x","metadata":{${keys.join(',')}}}`);
    }
    return `{"tasks":[${tasks.join(',')}]}`;
  },
  '2000 tasks x 95 unknown keys (just under the limits)': () => {
    const tasks: string[] = [];
    for (let t = 0; t < 2000; t++) {
      const keys: string[] = [];
      for (let i = 0; i < 95; i++) keys.push(`"k${i}":1`);
      tasks.push(`{"task":"x",${keys.join(',')}}`);
    }
    return `{"tasks":[${tasks.join(',')}]}`;
  },
  '5000 tasks x 35 metadata keys (just under the limit)': () => {
    const tasks: string[] = [];
    for (let t = 0; t < 5000; t++) {
      const keys: string[] = [];
      for (let i = 0; i < 35; i++) keys.push(`"k${i}":1`);
      tasks.push(`{"task":"x","metadata":{${keys.join(',')}}}`);
    }
    return `{"tasks":[${tasks.join(',')}]}`;
  },
  '5000 tasks x 140 keys': () => {
    const tasks: string[] = [];
    for (let t = 0; t < 5000; t++) {
      const keys: string[] = [];
      for (let i = 0; i < 140; i++) keys.push(`"k${i}":1`);
      tasks.push(`{"task":"x","metadata":{${keys.join(',')}}}`);
    }
    return `{"tasks":[${tasks.join(',')}]}`;
  },
};
for (const [label, make] of Object.entries(shapes)) {
  const body = make();
  const h = monitorEventLoopDelay({ resolution: 1 });
  const cpu0 = process.cpuUsage();
  h.enable();
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  h.disable();
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `${label}: ${(body.length / 1e6).toFixed(1)} MB -> ${res.status} in ${ms.toFixed(0)} ms, longest event-loop stall ${(h.max / 1e6).toFixed(0)} ms, cpu ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms; ${(text.length / 1e3).toFixed(0)} KB answer ${text.slice(0, 100)}`,
  );
}
server.close();
await client.close();
const redis = createRedis('redis://127.0.0.1:6379', 'producer');
await deleteKeysWithPrefix(redis, PREFIX);
redis.disconnect();
