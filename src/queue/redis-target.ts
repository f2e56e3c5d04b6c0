// Where a fleet's Redis is: one server (REDIS_URL), a Redis Cluster (REDIS_CLUSTER_NODES) or a server behind
// Sentinel (REDIS_SENTINELS + REDIS_SENTINEL_NAME). One owner, so every process (worker, API, board, CLI) and the
// client library read the same three settings the same way, and every error names the setting that was used.
import { ConfigError } from '../kernel/errors.js';
import { redactUrl } from '../logging/redact.js';

export interface HostPort {
  host: string;
  port: number;
}

/**
 * How a cluster's nodes or Sentinel's servers are reached: an ACL user and password, TLS (Node's default CAs, or
 * `ca` in their place), and the sentinels' own user and password. One server's URL carries all of it itself.
 */
export interface RedisAccess {
  username?: string | undefined;
  password?: string | undefined;
  tls?: { ca?: string | undefined } | undefined;
  sentinelUsername?: string | undefined;
  sentinelPassword?: string | undefined;
}

export type RedisTarget =
  | { kind: 'server'; url: string }
  | { kind: 'cluster'; nodes: HostPort[]; access?: RedisAccess }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string; access?: RedisAccess };

/** The three ways to name a Redis, as the environment and FleetClient's options give them. */
export interface RedisTargetSettings {
  url?: string | undefined;
  clusterNodes?: string | undefined;
  sentinels?: string | undefined;
  sentinelName?: string | undefined;
  /** Read with a cluster or Sentinel only: REDIS_URL carries its own (`rediss://user:pass@host`). */
  username?: string | undefined;
  password?: string | undefined;
  tls?: boolean | undefined;
  /** PEM certificates to trust instead of Node's default CAs (REDIS_TLS_CA_FILE's content); needs `tls`. */
  tlsCa?: string | undefined;
  /** The sentinels' own ACL user and password, when they ask for one (Sentinel only). */
  sentinelUsername?: string | undefined;
  sentinelPassword?: string | undefined;
}

const DEFAULT_URL = 'redis://127.0.0.1:6379';
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/;

/** What is wrong with a `host:port,host:port` list (an IPv6 address in brackets), or null when nothing is. */
export function hostPortsProblem(value: string): string | null {
  const items = value.split(',').map((item) => item.trim());
  const bad = items.find((item) => toHostPort(item) === null);
  if (bad === undefined) return null;
  return `must list host:port pairs separated by commas (bad: ${JSON.stringify(bad)})`;
}

/** The list's pairs; throws naming `variable` and the bad item. */
export function parseHostPorts(value: string, variable: string): HostPort[] {
  const problem = hostPortsProblem(value);
  if (problem !== null) throw badTarget(`${variable} ${problem}`);
  return value.split(',').map((item) => toHostPort(item.trim())!);
}

function toHostPort(item: string): HostPort | null {
  const at = item.lastIndexOf(':');
  const host = item.slice(0, at);
  const port = item.slice(at + 1);
  if (at < 1 || !HOST.test(host) || !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return null;
  return { host: host.replace(/^\[|\]$/g, ''), port: Number(port) };
}

/**
 * The target the settings name. A cluster and Sentinel at once is refused (which one was meant cannot be
 * guessed); either of them wins over REDIS_URL, whose default is always there.
 */
export function redisTarget(settings: RedisTargetSettings, names = ENV_NAMES): RedisTarget {
  const { clusterNodes, sentinels, sentinelName } = settings;
  if (clusterNodes && sentinels) {
    throw badTarget(
      `${names.clusterNodes} and ${names.sentinels} are both set: a Redis is either one or the other`,
    );
  }
  if (clusterNodes) {
    const nodes = parseHostPorts(clusterNodes, names.clusterNodes);
    return { kind: 'cluster', nodes, ...accessOf(settings, names, false) };
  }
  if (sentinels) {
    if (!sentinelName) throw badTarget(`${names.sentinels} needs ${names.sentinelName} (the master's name)`);
    const list = parseHostPorts(sentinels, names.sentinels);
    return { kind: 'sentinel', sentinels: list, name: sentinelName, ...accessOf(settings, names, true) };
  }
  if (sentinelName) throw badTarget(`${names.sentinelName} is set without ${names.sentinels}`);
  // The URL carries its own user, password and TLS: the other settings are not read (an image may well set
  // REDIS_PASSWORD for something else, so they are not refused either).
  return { kind: 'server', url: settings.url ?? DEFAULT_URL };
}

/** `{ access }` when any is given, else nothing: a target without credentials stays as it was. */
function accessOf(
  settings: RedisTargetSettings,
  names: typeof ENV_NAMES,
  sentinel: boolean,
): { access?: RedisAccess } {
  if (settings.tlsCa !== undefined && !settings.tls) {
    throw badTarget(`${names.tlsCa} is set but ${names.tls} is not on: turn TLS on, or leave the CA out`);
  }
  const access: RedisAccess = {};
  if (settings.username) access.username = settings.username;
  if (settings.password) access.password = settings.password;
  if (settings.tls) access.tls = settings.tlsCa === undefined ? {} : { ca: settings.tlsCa };
  if (sentinel && settings.sentinelUsername) access.sentinelUsername = settings.sentinelUsername;
  if (sentinel && settings.sentinelPassword) access.sentinelPassword = settings.sentinelPassword;
  return Object.keys(access).length === 0 ? {} : { access };
}

export const ENV_NAMES = {
  url: 'REDIS_URL',
  clusterNodes: 'REDIS_CLUSTER_NODES',
  sentinels: 'REDIS_SENTINELS',
  sentinelName: 'REDIS_SENTINEL_NAME',
  username: 'REDIS_USERNAME',
  password: 'REDIS_PASSWORD',
  tls: 'REDIS_TLS',
  tlsCa: 'REDIS_TLS_CA_FILE',
  sentinelUsername: 'REDIS_SENTINEL_USERNAME',
  sentinelPassword: 'REDIS_SENTINEL_PASSWORD',
};

/** FleetClient's options, named in its errors. */
export const OPTION_NAMES = {
  url: 'redisUrl',
  clusterNodes: 'redisClusterNodes',
  sentinels: 'redisSentinels',
  sentinelName: 'redisSentinelName',
  username: 'redisUsername',
  password: 'redisPassword',
  tls: 'redisTls',
  tlsCa: 'redisTlsCa',
  sentinelUsername: 'redisSentinelUsername',
  sentinelPassword: 'redisSentinelPassword',
};

const list = (nodes: HostPort[]) => nodes.map(({ host, port }) => `${host}:${port}`).join(',');

/**
 * The setting that was used, as an error message shows it: `REDIS_URL=redis://:***@host:6379`,
 * `REDIS_CLUSTER_NODES=a:1,b:2 (REDIS_PASSWORD set, REDIS_TLS=on)`. Which credentials were given, never their values.
 */
export function describeRedisTarget(target: RedisTarget): string {
  switch (target.kind) {
    case 'server':
      return `REDIS_URL=${redactUrl(target.url)}`;
    case 'cluster':
      return `REDIS_CLUSTER_NODES=${list(target.nodes)}${accessNote(target.access, [])}`;
    case 'sentinel':
      return `REDIS_SENTINELS=${list(target.sentinels)}${accessNote(target.access, [`REDIS_SENTINEL_NAME=${target.name}`])}`;
  }
}

function accessNote(access: RedisAccess | undefined, first: string[]): string {
  const notes = [...first];
  // The user name is not a secret, but which one was tried is what a person checks first.
  if (access?.username) notes.push(`REDIS_USERNAME=${access.username}`);
  if (access?.password) notes.push('REDIS_PASSWORD set');
  if (access?.sentinelUsername) notes.push(`REDIS_SENTINEL_USERNAME=${access.sentinelUsername}`);
  if (access?.sentinelPassword) notes.push('REDIS_SENTINEL_PASSWORD set');
  if (access?.tls)
    notes.push(access.tls.ca === undefined ? 'REDIS_TLS=on' : 'REDIS_TLS=on with REDIS_TLS_CA_FILE');
  return notes.length === 0 ? '' : ` (${notes.join(', ')})`;
}

/** The hash tag Redis Cluster hashes a key by: what is between the first `{` and the next `}`, if not empty. */
export function hashTag(key: string): string | null {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : null;
}

/**
 * On a cluster every key of one fleet must hash to one slot: the Lua scripts and BullMQ's own scripts and flows
 * touch several keys in one command, which a cluster runs only when they share a slot. A braced prefix does it.
 */
export function assertPrefixFits(target: RedisTarget, prefix: string, variable = 'QUEUE_PREFIX'): void {
  if (target.kind !== 'cluster' || hashTag(prefix) !== null) return;
  throw badTarget(
    `${variable}=${JSON.stringify(prefix)} has no hash tag: on a Redis Cluster every key of one fleet must hash ` +
      `to one slot (its scripts and batches touch several keys at once), so put the prefix in braces, e.g. ` +
      `{${prefix}}`,
  );
}

function badTarget(message: string): ConfigError {
  return new ConfigError('bad_env', message);
}
