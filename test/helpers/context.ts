/**
 * The one test environment of a run: a temporary data directory with a real SQLite registry and a
 * real embedded ClickHouse engine. The engine allows one data directory per process, so every
 * test shares it and isolates itself by creating its own team.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Express } from 'express';
import { pino } from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AppDeps, RouteSpec } from '../../src/http/routes.js';
import { SchemaRegistry } from '../../src/http/validation.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { ROUTES } from '../../src/routes.js';
import { createEventStore, ensureDatabase, type EventStore } from '../../src/stores/clickhouse.js';
import { teamScopedInterface } from '../../src/clickhouse-http/interface.js';
import { RateLimiter } from '../../src/limits/rate-limiter.js';
import { migrateEventStore, migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { openSecretBox } from '../../src/stores/secrets.js';
import { resealEndpointSecrets } from '../../src/webhooks/repository.js';
import { createTeam } from '../../src/teams/repository.js';
import { freshReads } from '../../src/ingest/freshness.js';
import { startIngestPipeline, type IngestPipeline } from '../../src/ingest/pipeline.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { sqliteDatabase } from '../../src/stores/sql.js';

/** The app's deps as the tests build them: on SQLite, its connection and the log's own parts at hand. */
export type TestDeps = AppDeps & { registry: Registry; ingest: IngestPipeline };

export interface TestEnv {
  dataDir: string;
  config: Config;
  registry: Registry;
  events: EventStore;
  loaderEvents: EventStore;
  schemas: SchemaRegistry;
  /** Every log line written by the apps of this run, parsed. */
  logLines: Record<string, unknown>[];
  deps: TestDeps;
  app: Express;
}

let env: TestEnv | undefined;

export function testEnv(): TestEnv {
  if (!env) throw new Error('test environment not started: is test/helpers/hooks.js required?');
  return env;
}

export async function startTestEnv(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-test-'));
  // A slow loader interval: a read right after an ingest finds its records only because reads wait
  // for the loader (and wake it), which every test that reads what it sent then exercises.
  // Raw events kept forever: tests with fixed dates must not age past the retention (its own test sets one).
  // Webhooks go to local receivers (http, loopback), retried quickly.
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    LOAD_INTERVAL_MS: '2000',
    ASSET_DECIMALS: 'ETH:18,WBTC:8',
    EVENTS_TTL_DAYS: '0',
    WEBHOOK_ALLOW_HTTP: '1',
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
    // BI queries over their time limit stop (a test): 2 s, not 5 minutes.
    BI_MAX_EXECUTION_TIME_S: '2',
  });
  const registry = openRegistry(dataDir);
  migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
  // As main.ts does: no key given, so one is generated into the data directory.
  const secrets = openSecretBox(config.secretsKeys, dataDir);
  await resealEndpointSecrets(sqliteDatabase(registry), secrets);
  const events = createEventStore(config.clickhouse);
  await ensureDatabase(events, config.clickhouse);
  await migrateEventStore(events, path.join(SCHEMA_DIR, 'clickhouse'));
  const loaderEvents = createEventStore(config.clickhouse);
  await ensureDatabase(loaderEvents, config.clickhouse);
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const logLines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logLines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const metrics = new Metrics();
  const ingest = startIngestPipeline({ config, registry, events, loaderEvents, schemas, logger, metrics });
  const readEvents = freshReads(events, ingest.freshness, config.ingest.readWaitMs);
  const webhooks = new Dispatcher(registry, secrets, config.webhooks, logger, { publicUrl: 'http://spendscope.test', pollMs: 100 });
  webhooks.start();
  // As main.ts: one limiter shared by the routes and the BI interface.
  const rateLimiter = new RateLimiter(config.rateLimits);
  const db = sqliteDatabase(registry);
  const clickhouseHttp = teamScopedInterface({ config, db, events, rateLimiter });
  const deps: TestDeps = { config, registry, db, events, loaderEvents, schemas, logger, ingest, readEvents, metrics, secrets, webhooks, clickhouseHttp, rateLimiter };
  env = { dataDir, config, registry, events, loaderEvents, schemas, logLines, deps, app: createApp(deps, { validateResponses: true }) };
}

export async function stopTestEnv(): Promise<void> {
  if (!env) return;
  await env.deps.webhooks.close();
  await env.deps.ingest.close();
  env.registry.close();
  await env.events.close();
  await env.loaderEvents.close();
  fs.rmSync(env.dataDir, { recursive: true, force: true });
  env = undefined;
}

/** The service app with extra routes mounted (for error paths no real route has yet). */
export function appWith(routes: readonly RouteSpec[], deps: Partial<TestDeps> = {}): Express {
  const e = testEnv();
  return createApp({ ...e.deps, ...deps }, { validateResponses: true }, [...ROUTES, ...routes]);
}

let teamCounter = 0;

/** A fresh team with a key: the unit of isolation between tests. */
export async function newTeam(label = 'team'): Promise<{ teamId: string; name: string; apiKey: string; auth: [string, string] }> {
  const name = `${label}-${process.pid}-${++teamCounter}-${Math.random().toString(36).slice(2, 8)}`;
  const { team, key } = await createTeam(testEnv().deps.db, name);
  return { teamId: team.id, name, apiKey: key.apiKey, auth: ['Authorization', `Bearer ${key.apiKey}`] };
}

/** The read session once ClickHouse holds everything the team had acknowledged (tests read it directly). */
export function loadedEvents(teamId: string): Promise<EventStore> {
  return testEnv().deps.readEvents(teamId);
}

/** supertest against the shared app. */
export function api(app: Express = testEnv().app) {
  return supertest(app);
}

/** Asserts the one error shape and returns the error object. */
export function errorOf(body: unknown): { code: string; message: string; details?: unknown; requestId: string } {
  const error = (body as { error?: unknown }).error as { code: string; message: string; requestId: string };
  if (!error || typeof error.code !== 'string' || typeof error.message !== 'string' || typeof error.requestId !== 'string') {
    throw new Error(`not the error shape: ${JSON.stringify(body)}`);
  }
  return error;
}

/** The shared test app on a real port (a browser or the SDK needs one). */
export async function listenOnce(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(testEnv().app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

