// An on-CPU profile of some processes, from `perf record` (every thread, sampled only while on a core) and the
// JavaScript frames' names node writes with --perf-basic-prof. V8's own profiler (cpu-profile.ts) samples the
// main thread on a timer, descheduled or not, and sees no other thread; this one splits a process's CPU into its
// main thread, by component as cpu-profile.ts splits it, and its background threads: V8's optimizing compiler,
// the garbage collector's helpers, the rest.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { componentOfFile, componentOfPackage, MODULE, ownFile } from './profile-components.js';

export const PERF_HZ = 499;

export interface PerfSummary {
  /** Milliseconds of CPU, as samples over the sampling rate: all threads, the main thread, the others. */
  cpuMs: number;
  mainMs: number;
  backgroundMs: number;
  /** The main thread by component, ms, largest first. */
  byComponent: Record<string, number>;
  /** The background threads by what they did, ms. */
  background: Record<string, number>;
  /** The main thread's leaf-most JavaScript function (`name file:line`), ms, top 30. */
  topFunctions: Record<string, number>;
}

/** `perf record` of these processes (call graphs, every thread) until `stop`. */
export class PerfRecording {
  private constructor(
    private readonly child: ChildProcess,
    readonly file: string,
  ) {}

  static start(pids: readonly number[], file: string): PerfRecording {
    if (spawnSync('perf', ['--version']).status !== 0) {
      throw new Error('perf is missing: apt-get install -y linux-perf (BENCH_PERF=1 needs it)');
    }
    const child = spawn(
      'perf',
      ['record', '-g', '-F', String(PERF_HZ), '-p', pids.join(','), '-o', file, '--quiet'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    return new PerfRecording(child, file);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGINT');
    await exited;
  }
}

/** Frames of one sample, innermost first (`perf script` prints them so), and its thread. */
interface Sample {
  pid: number;
  tid: number;
  frames: string[];
}

const HEAD = /^\s*\S+\s+(\d+)\/(\d+)\s/;
// `perf script` frame lines: `<address> <symbol> (<dso>)`; a JavaScript frame's symbol is `JS:*name url:line:col`.
const FRAME = /^\s*[0-9a-f]+\s+(.*?)(?:\s+\([^)]*\))?$/;
const JS_FRAME = /^JS:\S?(\S*)\s+(\S+?):(\d+):\d+$/;

async function* samplesOf(file: string, pid: number): AsyncGenerator<Sample> {
  const script = spawn('perf', ['script', '-i', file, '--pid', String(pid), '-F', 'comm,pid,tid,ip,sym'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let current: Sample | undefined;
  for await (const line of createInterface({ input: script.stdout })) {
    if (line.trim() === '') {
      if (current?.frames.length) yield current;
      current = undefined;
      continue;
    }
    const head = HEAD.exec(line);
    if (head && !/^\s/.test(line)) {
      current = { pid: Number(head[1]), tid: Number(head[2]), frames: [] };
      continue;
    }
    const frame = FRAME.exec(line)?.[1];
    if (current && frame) current.frames.push(frame);
  }
  if (current?.frames.length) yield current;
}

function backgroundKind(frames: readonly string[]): string {
  const all = frames.join(' ');
  if (/compiler::|CompilationJob|Maglev|Turbofan/.test(all)) return 'optimizing compiler';
  if (/Scaveng|Marking|Sweep|Evacuat|Compactor|Heap::|Unmapper|GCTracer/.test(all))
    return 'garbage collector';
  return 'other';
}

function mainComponent(frames: readonly string[]): { component: string; leaf: string | undefined } {
  let pkg: string | undefined;
  let owner: string | undefined;
  let leaf: string | undefined;
  for (const frame of frames) {
    const js = JS_FRAME.exec(frame);
    if (!js) continue;
    const [, name, url, line] = js;
    leaf ??= `${name || '(anonymous)'} ${url!.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${line}`;
    owner = ownFile(url!);
    if (owner) break;
    pkg ??= MODULE.exec(url!)?.[1];
  }
  if (pkg) return { component: componentOfPackage(pkg, owner), leaf };
  if (owner) return { component: componentOfFile(owner), leaf };
  if (leaf) return { component: 'node internals (no caller)', leaf };
  const all = frames.join(' ');
  if (/Scaveng|MarkCompact|Heap::|GCTracer/.test(all)) return { component: 'GC', leaf };
  if (/uv_|epoll|__libc_(read|write)|writev/.test(all))
    return { component: 'libuv, system calls (no JavaScript)', leaf };
  return { component: '(native, no JavaScript)', leaf };
}

/** The profile of one process of the recording. */
export async function summarizePerf(file: string, pid: number): Promise<PerfSummary> {
  const components = new Map<string, number>();
  const background = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  let main = 0;
  let others = 0;
  for await (const sample of samplesOf(file, pid)) {
    if (sample.pid !== pid) continue;
    if (sample.tid !== pid) {
      others++;
      add(background, backgroundKind(sample.frames));
      continue;
    }
    main++;
    const { component, leaf } = mainComponent(sample.frames);
    add(components, component);
    if (leaf) add(functions, leaf);
  }
  const ms = (samples: number) => Math.round((samples / PERF_HZ) * 100_000) / 100;
  const top = (map: Map<string, number>, n: number) =>
    Object.fromEntries(
      [...map.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, samples]) => [k, ms(samples)]),
    );
  return {
    cpuMs: ms(main + others),
    mainMs: ms(main),
    backgroundMs: ms(others),
    byComponent: top(components, 100),
    background: top(background, 10),
    topFunctions: top(functions, 30),
  };
}
