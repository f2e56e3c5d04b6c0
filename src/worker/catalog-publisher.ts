// Publishes the catalog this worker serves at start, then keeps its hash (and, while it is the latest, the
// catalog) alive: when live workers serve more than one catalog, each says so in its log (once per change) and
// in the catalogs_served gauge. A catalog whose workers are all gone expires (catalog-store.ts).
import type { RedisClient } from '../queue/redis.js';
import { buildCatalog, type Catalog } from '../catalog/catalog.js';
import { CATALOG_REFRESH_MS, CatalogStore } from '../catalog/catalog-store.js';
import type { Logger } from '../logging/logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { FleetRuntime } from './fleet-runtime.js';

export interface CatalogPublisher {
  catalog: Catalog;
  close(): void;
}

export async function publishCatalog(
  runtime: FleetRuntime,
  redis: RedisClient,
  prefix: string,
  logger: Logger,
  metrics: FleetMetrics,
  refreshMs = CATALOG_REFRESH_MS,
): Promise<CatalogPublisher> {
  const catalog = buildCatalog(runtime.agents.values(), runtime.toolList);
  const store = new CatalogStore(redis, prefix, { refreshMs });
  await store.publish(catalog);
  logger.info({ hash: catalog.hash, agents: catalog.agents.map((a) => a.name) }, 'catalog published');
  let reported = '';
  const check = async () => {
    const live = await store.refresh(catalog);
    metrics.observeCatalogs(live.length);
    const key = [...live].sort().join(',');
    if (live.length > 1 && key !== reported) {
      logger.warn(
        { hash: catalog.hash, live },
        'workers serve different catalogs: tasks may be checked against another',
      );
    }
    reported = live.length > 1 ? key : '';
  };
  await check();
  // Redis being away is reported by the outage log; the next round tries again.
  const timer = setInterval(() => void check().catch(() => undefined), refreshMs);
  timer.unref();
  return { catalog, close: () => clearInterval(timer) };
}
