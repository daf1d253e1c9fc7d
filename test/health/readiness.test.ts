/**
 * Readiness (GET /healthz) says 503 whenever this instance cannot acknowledge ingest, so that a
 * load balancer stops sending it batches; liveness (GET /livez, /healthz?live) stays 200 while the
 * process runs. Outages are real ones: a detached ClickHouse table (the loader fails, the backlog
 * grows to its bound), a SQLite file that cannot grow (SQLITE_FULL, as on a full disk).
 */
import { expect } from 'chai';
import path from 'node:path';
import { Freshness } from '../../src/ingest/freshness.js';
import { GroupCommit } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { Loader } from '../../src/ingest/local-loader.js';
import { IngestLog } from '../../src/ingest/log.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { createEventStore } from '../../src/stores/clickhouse.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { sqliteDatabase } from '../../src/stores/sql.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { sleep } from '../helpers/common.js';
import { api, appWith, errorOf, newTeam, testEnv, registryCommits } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';
import { event } from '../ingest/fixtures.js';

type App = ReturnType<typeof appWith>;

/** Both liveness answers: 200 and nothing but the process's own state. */
async function expectAlive(app: App): Promise<void> {
  for (const at of ['/livez', '/healthz?live', '/healthz?live=1']) {
    const res = await api(app).get(at).expect(200);
    expect(res.body, at).to.have.keys('status', 'uptimeSeconds');
    expect(res.body.status).to.equal('ok');
  }
}

const reasonsOf = (body: unknown) => (errorOf(body).details as { field: string; message: string }[]).map((d) => d.field);

describe('readiness and liveness', function () {
  this.timeout(60_000);

  it('a backlog outage: ready while the loader fails under the bound, 503 naming the backlog at it (as ingest), ready again once ClickHouse is back; /livez 200 throughout', async () => {
    const team = await newTeam('ready-backlog');
    const { deps, events } = testEnv();
    // A group commit of its own on the shared log and loader, with a bound the test sets.
    const limits = { maxRows: 1e9, maxBytes: 1024 ** 4 };
    const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger);
    const app = appWith([], { ingest: { ...deps.ingest, commit, ingestor: new Ingestor(deps.schemas, commit) } });
    let next = 0;
    const send = () => api(app).post('/api/v1/events').set(...team.auth).send({ events: Array.from({ length: 20 }, () => event({ id: `rb-${next++}` })) });

    // A rollup's table gone: every block insert fails (a real ClickHouse error).
    await events.command('DETACH TABLE spend_minutely');
    let attached = false;
    try {
      await send().expect(200);
      deps.ingest.freshness.wakeLoader();
      for (let i = 0; i < 100 && !deps.ingest.loader.isFailing; i++) await sleep(50);
      expect(deps.ingest.loader.isFailing).to.equal(true);

      // The loader fails but records are still acknowledged: ready, and saying so.
      const failing = await api(app).get('/healthz').expect(200);
      expect(failing.body.status).to.equal('ok');
      expect(failing.body.ingest).to.include({ loader: 'failing', log: 'ok' });
      await expectAlive(app);

      // The bound 20 records away: one more batch reaches it.
      limits.maxRows = deps.ingest.freshness.backlog().rows + 20;
      await api(app).get('/healthz').expect(200);
      await send().expect(200);
      const full = await api(app).get('/healthz').expect(503);
      expect(full.body.status).to.equal('unavailable');
      expect(full.body.stores).to.deep.equal({ registry: 'ok', clickhouse: 'ok' });
      expect(full.body.ingest.backlogRows).to.be.at.least(full.body.ingest.backlogMaxRows);
      expect(full.body.ingest.backlogMaxRows).to.equal(limits.maxRows);
      expect(errorOf(full.body).code).to.equal('store_unavailable');
      expect(reasonsOf(full.body)).to.deep.equal(['ingest.backlogRows']);
      expect(full.body.error.message).to.include('INGEST_BACKLOG_MAX_ROWS');
      // What readiness says is what ingest does.
      expect(errorOf((await send().expect(503)).body).code).to.equal('store_unavailable');
      await expectAlive(app);

      await events.command('ATTACH TABLE spend_minutely');
      attached = true;
      expect(await deps.ingest.freshness.waitForTeam(team.teamId, 20_000)).to.equal(true);
      const back = await api(app).get('/healthz').expect(200);
      expect(back.body.ingest).to.include({ loader: 'ok', log: 'ok' });
      await send().expect(200);
    } finally {
      if (!attached) await events.command('ATTACH TABLE spend_minutely');
    }
  });

  it('a failed write to the ingest log (disk full): 503 naming the log while ingest refuses, 200 after the next write succeeds; /livez 200 throughout', async () => {
    const team = await newTeam('ready-disk');
    const { deps } = testEnv();
    // An ingest log of its own, in a SQLite file the test can fill.
    const db = openRegistry(tempDir('ready-disk'));
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    const log = new IngestLog(db, 7);
    const { loadedPos, unloaded } = Loader.state(db);
    const freshness = new Freshness(loadedPos, unloaded);
    const commit = new GroupCommit(registryCommits(db), log, freshness, { maxRows: 1e9, maxBytes: 1024 ** 4 }, deps.logger);
    const app = appWith([], { ingest: { ...deps.ingest, log, freshness, commit, ingestor: new Ingestor(deps.schemas, commit) } });
    let next = 0;
    const send = () =>
      api(app)
        .post('/api/v1/events')
        .set(...team.auth)
        .send({ events: Array.from({ length: 50 }, () => event({ id: `rd-${next++}`, metadata: { note: 'x'.repeat(500) } })) });
    try {
      await send().expect(200);
      await api(app).get('/healthz').expect(200);

      // The file may not grow by one page: SQLite answers SQLITE_FULL, as when the disk is full.
      const pages = db.pragma('page_count', { simple: true }) as number;
      db.pragma(`max_page_count = ${pages}`);
      const refused = await send().expect(503);
      expect(errorOf(refused.body).code).to.equal('store_unavailable');
      const down = await api(app).get('/healthz').expect(503);
      expect(down.body.status).to.equal('unavailable');
      expect(down.body.stores).to.deep.equal({ registry: 'ok', clickhouse: 'ok' });
      expect(down.body.ingest.log).to.equal('failing');
      expect(down.body.ingest.logFailedAgoMs).to.be.a('number');
      expect(reasonsOf(down.body)).to.deep.equal(['ingest.log']);
      expect(down.body.error.message).to.include('full');
      await expectAlive(app);
      // Still refused, still not ready.
      await send().expect(503);
      await api(app).get('/healthz').expect(503);

      // Space again: the next batch is acknowledged, and the instance is ready.
      db.pragma('max_page_count = 1073741823');
      await send().expect(200);
      const up = await api(app).get('/healthz').expect(200);
      expect(up.body.ingest).to.include({ log: 'ok', logFailedAgoMs: null });
      await expectAlive(app);
    } finally {
      log.stop();
      db.close();
    }
  });

  it('shutting down: 503 saying so once the group commit refuses new writes', async () => {
    const { deps } = testEnv();
    const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, { maxRows: 1e9, maxBytes: 1024 ** 4 }, deps.logger);
    const app = appWith([], { ingest: { ...deps.ingest, commit } });
    await api(app).get('/healthz').expect(200);
    await commit.close();
    const res = await api(app).get('/healthz').expect(503);
    expect(reasonsOf(res.body)).to.deep.equal(['status']);
    expect(res.body.error.message).to.include('shutting down');
    await expectAlive(app);
  });

  it('/livez answers 200 without a key while neither store answers, touching neither; /healthz answers 503 naming the registry, and shows both', async () => {
    const events = createEventStore({ mode: 'server', url: 'http://127.0.0.1:9', user: 'default', password: '', database: 'x' });
    const registry = openRegistry(tempDir('livez-closed'));
    registry.close();
    try {
      const app = appWith([], { events, db: sqliteDatabase(registry) });
      await expectAlive(app);
      const res = await api(app).get('/healthz').expect(503);
      expect(reasonsOf(res.body)).to.deep.equal(['stores.registry']);
      expect(res.body.stores.clickhouse).to.match(/^failed: /);
    } finally {
      await events.close();
    }
  });

  it('the OpenAPI document lists /livez and /healthz as public operations, with ?live', async () => {
    const doc = (await api().get('/openapi.json').expect(200)).body;
    for (const at of ['/livez', '/healthz']) {
      expect(doc.paths[at].get.security, at).to.deep.equal([]);
      expect(doc.paths[at].get.responses, at).to.have.property('200');
    }
    expect(doc.paths['/healthz'].get.responses).to.have.property('503');
    expect(doc.paths['/healthz'].get.parameters.map((p: { name: string }) => p.name)).to.include('live');
  });
});
