/** Graceful shutdown in-process: a request still running when shutdown starts gets its answer. */
import { expect } from 'chai';
import { ShuttingDown } from '../../src/domain/errors.js';
import { knownError } from '../../src/http/errors.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import http from 'node:http';
import { loadConfig } from '../../src/config.js';
import { defineRoute } from '../../src/http/routes.js';
import { startServer } from '../../src/server.js';
import { createEventStore } from '../../src/stores/clickhouse.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { createTeam } from '../../src/teams/repository.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import path from 'node:path';
import { appWith, testEnv } from '../helpers/context.js';
import { startIngestPipeline } from '../../src/ingest/pipeline.js';
import { tempDir } from '../helpers/processes.js';
import { sqliteDatabase } from '../../src/stores/sql.js';

function get(port: number, path: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers: { Authorization: `Bearer ${key}` }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

describe('graceful shutdown', () => {
  it('stops accepting, finishes the in-flight request, then closes both stores', async () => {
    // Stores of its own, so closing them does not end the shared test environment.
    const dataDir = tempDir('shutdown');
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0' });
    const registry = openRegistry(dataDir);
    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    const db = sqliteDatabase(registry);
    const { key } = await createTeam(db, 'shutdown');
    let eventsClosed = false;
    const httpStore = createEventStore({ mode: 'server', url: 'http://127.0.0.1:9', user: 'default', password: '', database: 'x' });
    const events = { ...httpStore, close: async () => { eventsClosed = true; await httpStore.close(); } };

    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const handlerStarted = new Promise<void>((r) => (started = r));
    const slow = defineRoute({
      method: 'get',
      path: '/test/slow',
      operationId: 'testSlow',
      summary: 'waits until released',
      tag: 'test',
      responses: { 200: { description: 'done' } },
      async handler() {
        started();
        await released;
        return { body: { finished: true } };
      },
    });
    const { schemas, logger, policyRevisions } = testEnv().deps;
    const ingest = startIngestPipeline({ config, registry, events, loaderEvents: events, schemas, logger, policyRevisions });
    const webhooks = new Dispatcher(registry, testEnv().deps.secrets, config.webhooks, logger, { publicUrl: 'http://spendscope.test' });
    webhooks.start();
    const app = appWith([slow], { config, registry, db, events, loaderEvents: events, ingest, webhooks });
    const running = await startServer(app, { config, db, events, loaderEvents: events, ingest, webhooks });

    const inFlight = get(running.port, '/api/v1/test/slow', key.apiKey);
    await handlerStarted;
    let shutdownDone = false;
    const stopping = running.shutdown().then(() => (shutdownDone = true));

    // New connections are refused while the old request is still running.
    let refused = false;
    await get(running.port, '/healthz', key.apiKey).catch(() => (refused = true));
    expect(refused).to.equal(true);
    expect(shutdownDone).to.equal(false);
    expect(registry.open).to.equal(true);

    release();
    const answer = await inFlight;
    expect(answer.status).to.equal(200);
    expect(JSON.parse(answer.body)).to.deep.equal({ finished: true });
    await stopping;
    expect(registry.open).to.equal(false);
    expect(eventsClosed).to.equal(true);
    // The group commit was drained and refuses further work.
    let refusedWrite: unknown;
    await ingest.commit.write('team', [{ id: 'x' } as never]).catch((err: unknown) => (refusedWrite = err));
    expect(refusedWrite).to.be.instanceOf(ShuttingDown);
    expect(knownError(refusedWrite)).to.include({ code: 'store_unavailable' });
  });
});
