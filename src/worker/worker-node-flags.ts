// The V8 flags a worker process starts with: `npm run worker`, the Dockerfile, docker-compose.yml, and the
// benchmarks and tests that start workers (test/unit/worker/worker-node-flags.test.ts checks each place).
//
// Why: a job's objects of a step (the prompt, the reply, the pending write) live across its model call, a
// second or more, so at hundreds or thousands of jobs in flight most of the young generation survives each
// scavenge and is copied. At 2,000 in flight, 3,500 jobs took a worker 362–416 scavenges with V8's default
// 16 MB semi-spaces and 100–102 with 64 MB, and the worker's CPU for them fell by 14–43 % (docs/benchmarks.md).
// V8 grows the semi-spaces only as far as the allocation rate needs, so a small worker does not pay the memory.
// Flags cannot be set once a process runs: the installed `agent-fleet worker` takes them from NODE_OPTIONS
// (docs/installing.md).
export const WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
