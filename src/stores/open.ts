import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { SCHEMA_DIR } from '../paths.js';
import { createEventStore, ensureDatabase, type EventStore } from './clickhouse.js';
import { migrateEventStore, migrateRegistry } from './migrations.js';
import { openRegistry, type Registry } from './sqlite.js';

/** Opens both stores and brings their schemas up to date; closes what it opened on failure. */
export async function openStores(config: Config, logger: Logger): Promise<{ registry: Registry; events: EventStore }> {
  const registry = openRegistry(config.dataDir);
  let events: EventStore | undefined;
  try {
    const applied = migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    if (applied.length) logger.info({ applied }, 'registry migrations applied');
    events = createEventStore(config.clickhouse);
    await ensureDatabase(events, config.clickhouse);
    const appliedCh = await migrateEventStore(events, path.join(SCHEMA_DIR, 'clickhouse'));
    if (appliedCh.length) logger.info({ applied: appliedCh }, 'ClickHouse migrations applied');
    return { registry, events };
  } catch (err) {
    registry.close();
    await events?.close().catch(() => undefined);
    throw err;
  }
}
