import path from 'node:path';
import { pino } from 'pino';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { SchemaRegistry } from './http/validation.js';
import { SCHEMA_DIR } from './paths.js';
import { EventStoreOpenError } from './stores/clickhouse.js';
import { openSharedStores, openStores } from './stores/open.js';
import { openSecretBox, SealedValueError, SecretsKeyError } from './stores/secrets.js';
import { resealEndpointSecrets } from './webhooks/repository.js';
import { MigrationError } from './stores/migrations.js';
import { bootstrapDefaultTeam } from './teams/bootstrap.js';
import { startServer } from './server.js';
import { banner, logDestination } from './http/log-format.js';
import { freshReads } from './ingest/freshness.js';
import { startIngestPipeline, startSharedIngestPipeline } from './ingest/pipeline.js';
import { Metrics } from './metrics/metrics.js';
import { Dispatcher } from './webhooks/dispatcher.js';
import { startBiServer, teamScopedInterface } from './clickhouse-http/interface.js';
import { RateLimiter, sharedRateLedger } from './limits/rate-limiter.js';
import { sqliteDatabase } from './stores/sql.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const destination = logDestination(config.logFormat);
  const logger = destination ? pino({ level: config.logLevel }, destination) : pino({ level: config.logLevel });
  // Compile the API schemas before touching any store: a broken schema file must not half-start.
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const stores = config.database ? await openSharedStores({ ...config, database: config.database }, logger) : await openStores(config, logger);
  const { events, loaderEvents } = stores;
  const db = 'registry' in stores ? sqliteDatabase(stores.registry) : stores.db;
  const secrets = openSecretBox(config.secretsKeys, config.dataDir);
  const resealed = await resealEndpointSecrets(db, secrets);
  if (resealed) logger.info({ resealed, keyId: secrets.currentKeyId }, 'webhook secrets encrypted under the current key');
  const bannerLines: string[] = [];
  await bootstrapDefaultTeam(db, config, (line) => bannerLines.push(line));
  if (bannerLines.length > 0) process.stdout.write(banner(bannerLines));
  const metrics = new Metrics();
  const ingest =
    'registry' in stores
      ? startIngestPipeline({ config, registry: stores.registry, events, loaderEvents, schemas, logger, metrics })
      : await startSharedIngestPipeline({ config, pool: stores.pool, db, events, loaderEvents, schemas, logger, metrics });
  const readEvents = freshReads(events, ingest.freshness, config.ingest.readWaitMs);
  const webhooks = new Dispatcher(db, secrets, config.webhooks, logger, { publicUrl: config.publicUrl });
  webhooks.start();
  // One limiter for the API and the BI interface: a holder's buckets are the same whichever it uses.
  // With PostgreSQL, instances lease from buckets they share: a key's rate holds across them.
  const rateLimiter = new RateLimiter(config.rateLimits, Date.now, db.dialect === 'postgres' ? sharedRateLedger(db) : undefined, logger);
  const clickhouseHttp = teamScopedInterface({ config, db, events, rateLimiter });
  const deps = { config, db, events, loaderEvents, logger, schemas, ingest, readEvents, metrics, secrets, webhooks, clickhouseHttp, rateLimiter };
  const app = createApp(deps);

  const running = await startServer(app, deps);
  const bi = clickhouseHttp && config.bi.port !== undefined ? await startBiServer(clickhouseHttp, config, config.bi.port) : undefined;
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // BI queries first: their engine sessions must end before the stores close.
    Promise.resolve(bi?.close())
      .then(() => running.shutdown())
      .then(
        () => {
          logger.info('stores closed; bye');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'closing the stores failed');
          process.exit(1);
        },
      );
  };
  // Handlers first, then the line that says we listen: a signal sent on reading that line must
  // find them (without one, SIGTERM kills the process outright, stores open).
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  logger.info(
    { host: config.host, port: running.port, dataDir: config.dataDir, clickhouse: config.clickhouse.mode, registry: config.database ? 'postgres' : 'sqlite', biPort: bi?.port },
    `spendscope listening on http://${config.host}:${running.port}`,
  );
  if (bi) logger.info({ host: config.host, port: bi.port }, `ClickHouse HTTP interface for BI tools on http://${config.host}:${bi.port}`);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MigrationError || err instanceof EventStoreOpenError || err instanceof SecretsKeyError || err instanceof SealedValueError) {
    process.stderr.write(`spendscope: ${err.message}\n`);
  } else {
    process.stderr.write(`spendscope: start-up failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
