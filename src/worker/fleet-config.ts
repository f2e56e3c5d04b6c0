// Which fleet configuration a worker serves: the module FLEET_CONFIG names, else agent-fleet.config.ts (or .js)
// in the working directory when there is one, else the built-in configuration (default-fleet.ts). A module exports its
// `defineFleet(...)` as default (or as `fleet`); a plain definition object is checked the same way.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineFleet, type Fleet, type FleetDefinition } from '../kernel/define-fleet.js';
import { ConfigError } from '../kernel/errors.js';
import type { Env } from '../../config/env.js';
import { defaultFleet, type DefaultToolsOptions } from './default-fleet.js';

const DEFAULT_FILES = ['agent-fleet.config.ts', 'agent-fleet.config.js'];

export interface LoadedFleet {
  fleet: Fleet;
  /** The module it came from; undefined for the built-in demo configuration. */
  source: string | undefined;
}

export async function loadFleetConfig(
  env: Env,
  options: DefaultToolsOptions & { cwd?: string } = {},
): Promise<LoadedFleet> {
  const cwd = options.cwd ?? process.cwd();
  const file = env.FLEET_CONFIG
    ? resolve(cwd, env.FLEET_CONFIG)
    : DEFAULT_FILES.map((name) => resolve(cwd, name)).find((path) => existsSync(path));
  if (!file) return { fleet: defaultFleet(env, options), source: undefined };
  if (!existsSync(file)) throw new ConfigError('bad_fleet_config', `FLEET_CONFIG: no file at ${file}`);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // The installed package runs compiled JavaScript: a .ts configuration needs a loader this process lacks.
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new ConfigError(
        'bad_fleet_config',
        `fleet configuration ${file} cannot be loaded without a TypeScript loader: write it as .js (or compile it), or run the worker under one (node --import tsx)`,
      );
    }
    // Node 22.18 and later run a .ts file by stripping its types, which leaves enums, namespaces and the like.
    if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') {
      const syntax = error instanceof Error ? error.message.split('\n')[0] : '';
      throw new ConfigError(
        'bad_fleet_config',
        `fleet configuration ${file} cannot be loaded by stripping its types (${syntax}): write it as .js (or compile it), or run the worker under a TypeScript loader (node --import tsx)`,
      );
    }
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new ConfigError('bad_fleet_config', `fleet configuration ${file} could not be loaded: ${reason}`);
  }
  const exported = module['default'] ?? module['fleet'];
  return { fleet: asFleet(exported, file), source: file };
}

function asFleet(value: unknown, file: string): Fleet {
  if (isFleet(value)) return value;
  if (typeof value === 'object' && value !== null && Array.isArray((value as FleetDefinition).agents)) {
    return defineFleet(value as FleetDefinition);
  }
  throw new ConfigError(
    'bad_fleet_config',
    `fleet configuration ${file} exports no fleet: export default defineFleet({ agents, tools })`,
  );
}

function isFleet(value: unknown): value is Fleet {
  return typeof value === 'object' && value !== null && (value as Fleet).agents instanceof Map;
}
