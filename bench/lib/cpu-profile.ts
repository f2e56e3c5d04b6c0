// Reads a V8 CPU profile (node --cpu-prof) and splits the samples of a time window by who spent them: the
// component of the leaf-most frame that is the fleet's code or a package (node's own internals count for the
// frame that called them), library time split again by the fleet's code that called it. Small enough to commit.
import { readFileSync } from 'node:fs';
import { componentOfFile, componentOfPackage, MODULE, ownFile } from './profile-components.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Milliseconds of samples in the window (idle excluded). */
  totalMs: number;
  windowMs: number;
  /** Component → ms, largest first. */
  byComponent: Record<string, number>;
  /** Fleet source file (nearest on the stack) → ms, largest first, top 25. */
  byOwnerFile: Record<string, number>;
  /** Self time per function (`name file:line`), top 30. */
  topFunctions: Record<string, number>;
}

export function summarizeProfile(file: string, fromUs = -Infinity, toUs = Infinity): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, { component: string; owner: string | undefined }>();
  const classify = (id: number) => {
    const known = memo.get(id);
    if (known) return known;
    const leaf = byId.get(id)!;
    const name = leaf.callFrame.functionName;
    let result: { component: string; owner: string | undefined };
    if (name === '(garbage collector)') result = { component: 'GC', owner: undefined };
    else if (name === '(program)') result = { component: '(program: native, not in JS)', owner: undefined };
    else if (name === '(idle)') result = { component: '(idle)', owner: undefined };
    else {
      let pkg: string | undefined;
      let owner: string | undefined;
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const url = byId.get(at)!.callFrame.url;
        owner = ownFile(url);
        if (owner) break;
        pkg ??= MODULE.exec(url)?.[1];
      }
      result = {
        component: pkg
          ? componentOfPackage(pkg, owner)
          : owner
            ? componentOfFile(owner)
            : 'node internals (no caller)',
        owner,
      };
    }
    memo.set(id, result);
    return result;
  };
  const components = new Map<string, number>();
  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let t = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (t < fromUs || t > toUs) continue;
    const id = profile.samples[i]!;
    const { component, owner } = classify(id);
    if (component === '(idle)') continue;
    total += delta;
    add(components, component, delta);
    add(owners, owner ?? '(none)', delta);
    const frame = byId.get(id)!.callFrame;
    const where = frame.url
      ? `${frame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${frame.lineNumber + 1}`
      : '';
    add(functions, `${frame.functionName || '(anonymous)'} ${where}`.trim(), delta);
  }
  const top = (map: Map<string, number>, n: number) =>
    Object.fromEntries(
      [...map.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, us]) => [k, Math.round(us / 10) / 100]),
    );
  return {
    totalMs: Math.round(total / 10) / 100,
    windowMs: Math.round((Math.min(toUs, profile.endTime) - Math.max(fromUs, profile.startTime)) / 10) / 100,
    byComponent: top(components, 100),
    byOwnerFile: top(owners, 25),
    topFunctions: top(functions, 30),
  };
}
