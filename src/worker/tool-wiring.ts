// Which tools a worker process offers, built once at start from the configuration.
import type { Pool } from 'mysql2/promise';
import type { Env } from '../../config/env.js';
import type { Logger } from '../logging/logger.js';
import { StaticToolProvider, type ToolProvider } from './tool-provider.js';

export interface ToolWiring {
  provider: ToolProvider;
  close(): Promise<void>;
}

export async function buildToolProvider(_env: Env, _store: Pool, _logger: Logger): Promise<ToolWiring> {
  return { provider: new StaticToolProvider([]), close: async () => undefined };
}
