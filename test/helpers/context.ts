/**
 * The test environments of a run. The first, always started: a temporary data directory with a
 * real SQLite registry and a real embedded ClickHouse engine. The engine allows one data directory
 * per process, so every test shares it and isolates itself by creating its own team. The second,
 * started when a suite asks for it (describeOnEachRegistry): the same service assembled on PostgreSQL (a
 * fresh database of the run's server) with ClickHouse reached over HTTP (the test ClickHouse server
 * over the same engine, a database of its own), as an instance of a deployment runs.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { App } from '../../src/app.js';
import { pino } from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/app.js';
import { sqliteCommits, type CommitStore } from '../../src/ingest/commit-store.js';
import { walSyncer } from '../../src/stores/sqlite.js';
import { SyncThread } from '../../src/stores/sync-thread.js';
import { loadConfig, type Config } from '../../src/config.js';
import { assembleDeps, closeDeps, type AppDeps } from '../../src/deps.js';
import type { RouteSpec } from '../../src/http/routes.js';
import { SchemaRegistry } from '../../src/http/validation.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { ROUTES } from '../../src/routes.js';
import type { EventStore } from '../../src/stores/clickhouse.js';
import { openSharedStores, openStores } from '../../src/stores/open.js';
import type { Dialect } from '../../src/stores/sql.js';
import type { Registry } from '../../src/stores/sqlite.js';
import { createTeam, keyDirectory } from '../../src/teams/repository.js';
import type { IngestPipeline } from '../../src/ingest/pipeline.js';
import { startClickHouseServer, type TestClickHouseServer } from './clickhouse-server.js';
import { freshDatabase } from './postgres.js';

/**
 * The app's deps as the tests build them, with the SQLite registry's connection and the local log's
 * parts at hand. On PostgreSQL those two are not there: `registry` throws, saying the test is one
 * for SQLite only, and `ingest` is the shared write path.
 */
export type TestDeps = AppDeps & { registry: Registry; ingest: IngestPipeline };

export interface TestEnv {
  dialect: Dialect;
  dataDir: string;
  config: Config;
  /** The SQLite registry (throws on PostgreSQL). */
  registry: Registry;
  events: EventStore;
  loaderEvents: EventStore;
  schemas: SchemaRegistry;
  /** Every log line written by this environment's app, parsed. */
  logLines: Record<string, unknown>[];
  deps: TestDeps;
  app: App;
}

interface Started {
  env: TestEnv;
  stop(): Promise<void>;
}

let embedded: Started | undefined;
let shared: Promise<Started> | undefined;
/** The environment of the suite being run: the SQLite one, or PostgreSQL's inside describeOnEachRegistry. */
let current: TestEnv | undefined;

export function testEnv(): TestEnv {
  if (!current) throw new Error('test environment not started: is test/helpers/hooks.js required?');
  return current;
}

/** The SQLite environment, whichever the current suite runs on (its engine serves the others). */
export function embeddedEnv(): TestEnv {
  if (!embedded) throw new Error('test environment not started: is test/helpers/hooks.js required?');
  return embedded.env;
}

/**
 * The settings both environments share. A slow loader interval: a read right after an ingest finds
 * its records only because reads wait for the loader (and wake it), which every test that reads
 * what it sent then exercises. Raw events kept forever: tests with fixed dates must not age past the
 * retention (its own test sets one). Webhooks go to local receivers (http, loopback), retried quickly.
 */
function testConfig(dataDir: string, more: Record<string, string> = {}): Config {
  return loadConfig({
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
    ...more,
  });
}

/** A logger whose lines are kept, parsed, for the tests that read them. */
function collectingLogger(): { logger: pino.Logger; logLines: Record<string, unknown>[] } {
  const logLines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logLines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), logLines };
}

const DISPATCH = { publicUrl: 'http://spendscope.test', pollMs: 100 };

export async function startTestEnv(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-test-'));
  const config = testConfig(dataDir);
  const { logger, logLines } = collectingLogger();
  // As main.ts does: the same opening and assembly.
  const stores = await openStores(config, logger);
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const deps = { ...(await assembleDeps(config, stores, schemas, logger, DISPATCH)), registry: stores.registry } as TestDeps;
  const env: TestEnv = { dialect: 'sqlite', dataDir, config, registry: stores.registry, events: stores.events, loaderEvents: stores.loaderEvents, schemas, logLines, deps, app: createApp(deps, { validateResponses: true }) };
  embedded = { env, stop: async () => closeDeps(deps).then(() => fs.rmSync(dataDir, { recursive: true, force: true })) };
  current = env;
}

async function startSharedEnv(): Promise<Started> {
  const clickhouse: TestClickHouseServer = await startClickHouseServer();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-test-pg-'));
  const config = testConfig(dataDir, {
    DATABASE_URL: await freshDatabase('routes'),
    CLICKHOUSE_URL: clickhouse.url,
    CLICKHOUSE_DATABASE: `routes_${crypto.randomBytes(4).toString('hex')}`,
    SECRETS_KEY: crypto.randomBytes(32).toString('base64'),
  });
  const { logger, logLines } = collectingLogger();
  const stores = await openSharedStores({ ...config, database: config.database! }, logger);
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const assembled = await assembleDeps(config, stores, schemas, logger, DISPATCH);
  const sqliteOnly = (): never => {
    throw new Error('this test reaches the SQLite registry: it cannot run on PostgreSQL (declare it outside describeOnEachRegistry)');
  };
  const deps = Object.defineProperty({ ...assembled }, 'registry', { get: sqliteOnly }) as TestDeps;
  const env: TestEnv = {
    dialect: 'postgres',
    dataDir,
    config,
    get registry() {
      return deps.registry;
    },
    events: stores.events,
    loaderEvents: stores.loaderEvents,
    schemas,
    logLines,
    deps,
    app: createApp(deps, { validateResponses: true }),
  };
  return {
    env,
    async stop() {
      await closeDeps(deps);
      await clickhouse.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A describe whose tests are declared twice: on the SQLite registry and on PostgreSQL (the service
 * assembled on each), so the two cannot drift apart (issue 30). Inside, testEnv(), api(), newTeam()
 * and the rest are the environment of the branch being run. The PostgreSQL one is started once, by
 * the first suite that asks, and kept for the run.
 */
export function describeOnEachRegistry(title: string, body: (this: Mocha.Suite, dialect: Dialect) => void): void {
  describe(title, () => {
    describe('on SQLite', function () {
      body.call(this, 'sqlite');
    });
    describe('on PostgreSQL', function () {
      before(async function () {
        this.timeout(120_000);
        shared ??= startSharedEnv();
        current = (await shared).env;
      });
      after(() => {
        current = embedded?.env;
      });
      body.call(this, 'postgres');
    });
  });
}

export async function stopTestEnv(): Promise<void> {
  const starting = shared;
  shared = undefined;
  try {
    const started = await starting?.catch(() => undefined);
    await started?.stop();
  } finally {
    await embedded?.stop();
    embedded = undefined;
    current = undefined;
  }
}

/** The service app with extra routes mounted (for error paths no real route has yet). */
export function appWith(routes: readonly RouteSpec[], deps: Partial<TestDeps> = {}): App {
  const e = testEnv();
  // Keys are looked up in the registry the app is given.
  const keys = deps.keys ?? (deps.db ? keyDirectory(deps.db) : e.deps.keys);
  return createApp({ ...e.deps, ...deps, keys }, { validateResponses: true }, [...ROUTES, ...routes]);
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
export function api(app: App = testEnv().app) {
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

/** The shared test app (or `app`) on a real port (a browser or the SDK needs one). */
export async function listenOnce(app: App = testEnv().app): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer(app);
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


/** One WAL flush thread for the tests' own group commits and loaders (the pipelines have theirs). */
const testSyncThread = new SyncThread();

/** A registry's WAL syncer, as a pipeline makes one. */
export const testWalSyncer = (registry: Registry) => walSyncer(registry, testSyncThread);

/** Commits to a registry, as the pipeline's group commit makes them. */
export const registryCommits = (registry: Registry): CommitStore => sqliteCommits(registry, testWalSyncer(registry));
