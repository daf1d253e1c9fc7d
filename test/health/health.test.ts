import { expect } from 'chai';
import path from 'node:path';
import { createEventStore } from '../../src/stores/clickhouse.js';
import { sqliteDatabase } from '../../src/stores/sql.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { api, appWith, errorOf } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';

describe('GET /healthz', () => {
  it('answers 200 without a key when both stores answer, naming each', async () => {
    const res = await api().get('/healthz').expect(200);
    expect(res.body).to.deep.include({ status: 'ok', stores: { registry: 'ok', clickhouse: 'ok' } });
    expect(res.body.ingest.loader).to.equal('ok');
    expect(res.body.ingest.backlogRows).to.be.a('number');
  });

  it('stays ready (200) when ClickHouse does not answer, saying so: ingest is still acknowledged into the log', async () => {
    // A real client pointed at a port nothing listens on: the store is down, not mocked. Unready here
    // would take every instance out of a load balancer at once, and ingest with them.
    const events = createEventStore({ mode: 'server', url: 'http://127.0.0.1:9', user: 'default', password: '', database: 'x' });
    try {
      const res = await api(appWith([], { events })).get('/healthz').expect(200);
      expect(res.body.status).to.equal('ok');
      expect(res.body.stores.registry).to.equal('ok');
      expect(res.body.stores.clickhouse).to.match(/^failed: /);
      expect(res.body).to.not.have.property('error');
    } finally {
      await events.close();
    }
  });

  it('answers 503 naming the registry when SQLite cannot answer', async () => {
    const registry = openRegistry(path.join(tempDir('closed-registry')));
    registry.close();
    const res = await api(appWith([], { db: sqliteDatabase(registry) })).get('/healthz').expect(503);
    expect(res.body.stores).to.deep.include({ clickhouse: 'ok' });
    expect(res.body.stores.registry).to.match(/^failed: /);
    expect(errorOf(res.body).code).to.equal('store_unavailable');
  });
});
