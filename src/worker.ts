// The public worker entry: start a worker process serving a fleet, and the built-in tools as factories a fleet
// configuration wires with its own options.
import type { Fleet } from './kernel/define-fleet.js';
import { createLogger, type Logger } from './logging/logger.js';
import { startWorkerProcess, type WorkerProcess } from './worker/worker-process.js';

export { sqlTools, type SqlToolSourceOptions } from './tools/sql-tool-source.js';
export { sendEmailTool, type EmailToolSourceOptions } from './tools/email-tool-source.js';
export { defaultAgent, defaultTools, demoTools, DEFAULT_AGENT } from './worker/default-fleet.js';
// The environment as the worker reads it (docs/configuration.md), for a configuration that wires the built-in
// tools from it: `defaultTools()` reads the process's; `parseEnv({ ...process.env, EMAIL_FROM: … })` another.
export { parseEnv, type Env } from '../config/env.js';
export type { WorkerProcess } from './worker/worker-process.js';
// What a fleet configuration is written with, so it may import everything from this one entry.
export { defineAgent, defineFleet, defineTool, type Fleet } from './kernel.js';

/** Starts a worker serving `fleet` (default: the configuration FLEET_CONFIG names, else the demo's). */
export function startWorker(options: { fleet?: Fleet; logger?: Logger } = {}): Promise<WorkerProcess> {
  return startWorkerProcess({
    logger: options.logger ?? createLogger('worker'),
    ...(options.fleet ? { fleet: options.fleet } : {}),
  });
}
