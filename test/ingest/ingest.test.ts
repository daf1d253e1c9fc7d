import { expect } from 'chai';
import { api, errorOf, loadedEvents, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { event, sdkRecord, storedCount, storedRows } from './fixtures.js';

describeOnEachRegistry('ingest', () => {
  describe('routes', () => {
    const routes: [string, string][] = [
      ['/api/v1/events', 'events'],
      ['/v1/events', 'events'],
      ['/api/v1/audit/batch', 'records'],
      ['/v1/audit/batch', 'records'],
      ['/audit/batch', 'records'],
    ];
    for (const [path, key] of routes) {
      it(`POST ${path} stores a valid batch`, async () => {
        const team = await newTeam();
        const records = [sdkRecord(), sdkRecord({ agent_id: 'agent-2' }), event({ id: undefined })];
        const res = await api().post(path).set(...team.auth).send({ [key]: records }).expect(200);
        expect(res.body).to.deep.equal({ ingested: 3, duplicates: 0, conflicts: 0, errors: [], warnings: [], alerts_created: 0 });
        expect(await storedCount(team.teamId)).to.equal(3);
        const sources = new Set((await storedRows(team.teamId)).map((r) => r.source));
        expect([...sources]).to.deep.equal([key === 'events' ? 'events' : 'sdk']);
      });
    }

    it('needs a key: 401 in the error shape, nothing stored', async () => {
      const res = await api().post('/audit/batch').send({ records: [sdkRecord()] }).expect(401);
      expect(errorOf(res.body).code).to.equal('unauthorized');
    });
  });

  describe('stored rows', () => {
    it('keep every field of a full SDK record, the record itself, and what is derived', async () => {
      const team = await newTeam();
      const record = sdkRecord({ extra_field_from_a_newer_sdk: { nested: true } });
      const before = Date.now();
      await api().post('/audit/batch').set(...team.auth).send({ records: [record] }).expect(200);
      const [row] = await storedRows(team.teamId);
      expect(row).to.deep.include({
        team_id: team.teamId,
        id: record.id,
        agent_id: 'agent-1',
        endpoint: record.endpoint,
        domain: 'api.example.com',
        method: 'GET',
        category: 'search',
        amount: '0.001',
        amount_text: '0.001000',
        amount_raw: '0',
        asset: record.asset,
        network: 'eip155:8453',
        scheme: 'exact',
        policy_evaluation: 'allowed',
        team_label: 'research',
        tx_hash: '0xdeadbeef',
        payer_address: record.payer_address,
        payee_address: record.payee_address,
        facilitator: null,
        status_code: 200,
        response_time_ms: 182,
        human_sponsor: 'ana@example.com',
        policy_id: null,
        budget_remaining: '9.999000',
        task_id: 'task-7',
        session_id: null,
        tags: ['search'],
        metadata: '{"purpose":"test"}',
        source: 'sdk',
        event_ms: String(record.created_at),
      });
      expect(row!.settled_at).to.be.a('string');
      expect(Number(row!.received_ms)).to.be.within(before, Date.now());
      // What no column keeps is kept aside, so the record can be returned as it was sent.
      expect(JSON.parse(row!.record_extra as string)).to.deep.equal({ extra_field_from_a_newer_sdk: { nested: true } });
    });

    it('keep aside what the columns normalise, and nothing for a plain SDK record', async () => {
      const team = await newTeam();
      const records = [
        sdkRecord({ id: 'plain' }),
        sdkRecord({ id: 'normalised', network: 'base', method: 'get', created_at: '2026-01-02T03:04:05.000Z', scheme: null, timestamp: 5 }),
      ];
      await api().post('/audit/batch').set(...team.auth).send({ records }).expect(200);
      const extras = Object.fromEntries((await storedRows(team.teamId)).map((r) => [r.id, r.record_extra]));
      expect(extras.plain).to.equal('');
      expect(JSON.parse(extras.normalised as string)).to.deep.equal({
        timestamp: 5,
        network: 'base',
        method: 'get',
        created_at: '2026-01-02T03:04:05.000Z',
        scheme: null,
      });
    });

    it('keep 18 decimals exactly and derive the amount from amount_raw for a known asset', async () => {
      const team = await newTeam();
      const events = [
        event({ id: 'tiny', amount: '0.000000000000000001' }),
        event({ id: 'huge', amount: '99999999999999999999.999999999999999999' }),
        event({ id: 'raw-usdc', amount: undefined, amount_raw: '1500', asset: 'USDC' }),
        event({ id: 'raw-address', amount: undefined, amount_raw: '2000000', asset: '0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913' }),
        event({ id: 'amount-wins', amount: '7', amount_raw: '1500', asset: 'USDC' }),
        event({ id: 'raw-unknown-asset', amount: undefined, amount_raw: '1500', asset: 'DOGE' }),
        event({ id: 'no-amount', amount: undefined }),
      ];
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      const amounts = Object.fromEntries((await storedRows(team.teamId)).map((r) => [r.id, r.amount]));
      expect(amounts).to.deep.equal({
        tiny: '0.000000000000000001',
        huge: '99999999999999999999.999999999999999999',
        'raw-usdc': '0.0015',
        'raw-address': '2',
        'amount-wins': '7',
        'raw-unknown-asset': '0',
        'no-amount': '0',
      });
      const [sum] = await (await loadedEvents(team.teamId)).query<{ total: string }>(
        'SELECT sum(amount) AS total FROM events WHERE team_id = {t:String}',
        { t: team.teamId },
      );
      expect(sum!.total).to.equal('100000000000000000009.0015');
    });

    it('derive the category: explicit field, metadata, tag, domain rule, default', async () => {
      const team = await newTeam();
      const events = [
        event({ id: 'explicit', category: 'Storage', metadata: { category: 'data' }, tags: ['llm'] }),
        event({ id: 'metadata', metadata: { category: 'data' }, tags: ['llm'] }),
        event({ id: 'tag', tags: ['nightly', 'LLM'] }),
        event({ id: 'domain', endpoint: 'https://eu.api.openai.com/v1/chat/completions' }),
        event({ id: 'default', endpoint: 'https://unknown.example.org/x' }),
      ];
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      const categories = Object.fromEntries((await storedRows(team.teamId)).map((r) => [r.id, r.category]));
      expect(categories).to.deep.equal({ explicit: 'storage', metadata: 'data', tag: 'llm', domain: 'llm', default: 'api' });
    });

    it('map x402 network names to CAIP-2 and keep an empty network', async () => {
      const team = await newTeam();
      const events = [
        event({ id: 'caip', network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }),
        event({ id: 'legacy', network: 'base-sepolia' }),
        event({ id: 'empty', network: '' }),
      ];
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      const networks = Object.fromEntries((await storedRows(team.teamId)).map((r) => [r.id, r.network]));
      expect(networks).to.deep.equal({ caip: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', legacy: 'eip155:84532', empty: '' });
    });
  });

  describe('event time', () => {
    it('honours created_at and timestamp (Unix ms or ISO 8601), else uses the receive time', async () => {
      const team = await newTeam();
      // Days relative to now: the times must stay within the retention of raw events (EVENTS_TTL_DAYS).
      const day = (daysAgo: number) => (Math.floor(Date.now() / 86_400_000) - daysAgo) * 86_400_000;
      const isoDay = new Date(day(100)).toISOString().slice(0, 10);
      const events = [
        event({ id: 'ms', created_at: day(100) + 11_045_678 }),
        event({ id: 'iso', created_at: `${isoDay}T03:04:05.678+01:00` }),
        event({ id: 'timestamp', timestamp: day(200) }),
        event({ id: 'created-wins', created_at: day(300), timestamp: day(350) }),
        event({ id: 'slightly-ahead', created_at: Date.now() + 4 * 60_000 }),
        event({ id: 'none' }),
      ];
      const before = Date.now();
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      const times = Object.fromEntries((await storedRows(team.teamId)).map((r) => [r.id, Number(r.event_ms)]));
      expect(times.ms).to.equal(day(100) + 11_045_678); // 03:04:05.678 UTC
      expect(times.iso).to.equal(day(100) + 7_445_678); // 03:04:05.678+01:00 is 02:04:05.678 UTC
      expect(times.timestamp).to.equal(day(200));
      expect(times['created-wins']).to.equal(day(300));
      expect(times['slightly-ahead']).to.be.greaterThan(before);
      expect(times.none).to.be.within(before, Date.now());
    });

    it('rejects seconds sent as ms and garbage', async () => {
      const team = await newTeam();
      const events = [event({ timestamp: Math.floor(Date.now() / 1000) }), event({ created_at: 'yesterday' }), event({ id: 'ok' })];
      const res = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      expect(res.body.ingested).to.equal(1);
      expect(res.body.errors.map((e: { index: number; field: string }) => [e.index, e.field])).to.deep.equal([
        [0, 'timestamp'],
        [1, 'created_at'],
      ]);
      expect(res.body.errors[0].message).to.include('seconds');
      expect(res.body.warnings).to.deep.equal([]);
    });

    it('stores a time more than 5 minutes ahead with the receive time, keeps the client\'s and warns', async () => {
      const team = await newTeam();
      const ahead = Date.now() + 10 * 60_000;
      const aheadIso = new Date(Date.now() + 3 * 3_600_000).toISOString();
      const before = Date.now();
      const res = await api()
        .post('/api/v1/audit/batch')
        .set(...team.auth)
        .send({ records: [event({ id: 'fast-1', created_at: ahead }), event({ id: 'in-time' }), event({ id: 'fast-2', timestamp: aheadIso })] })
        .expect(200);
      const after = Date.now();
      expect(res.body.ingested).to.equal(3);
      expect(res.body.errors).to.deep.equal([]);
      expect(res.body.warnings.map((w: { index: number; field: string }) => [w.index, w.field])).to.deep.equal([
        [0, 'created_at'],
        [2, 'timestamp'],
      ]);
      expect(res.body.warnings[0].message).to.match(/more than 5 minutes ahead.*receive time.*client_created_at/);
      const first = (await api().get('/api/v1/audit/fast-1').set(...team.auth).expect(200)).body;
      expect(first.created_at).to.be.within(before, after);
      expect(first.client_created_at).to.equal(ahead);
      const third = (await api().get('/api/v1/audit/fast-2').set(...team.auth).expect(200)).body;
      expect(third.created_at).to.be.within(before, after);
      expect(third.client_timestamp).to.equal(aheadIso);
      // Counted where it was received: in the window that holds now, not in a future one.
      const count = await api().post('/api/v1/audit/count').set(...team.auth).send({ endTime: after }).expect(200);
      expect(count.body.count).to.equal(3);
    });
  });

  describe('validation', () => {
    it('stores the valid records of a partial batch and reports the others by index', async () => {
      const team = await newTeam();
      const events = [event({ id: 'good-1' }), event({ amount: '-1' }), event({ id: 'good-2' }), 'not an object', null];
      const res = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
      expect(res.body.ingested).to.equal(2);
      expect(res.body.errors).to.deep.equal([
        { index: 1, field: 'amount', message: res.body.errors[0].message },
        { index: 3, field: 'record', message: 'must be an object' },
        { index: 4, field: 'record', message: 'must be an object' },
      ]);
      expect(await storedCount(team.teamId)).to.equal(2);
    });

    const invalid: [string, Record<string, unknown>][] = [
      ['agent_id', { agent_id: '' }],
      ['agent_id', { agent_id: 'x'.repeat(257) }],
      ['agent_id', { agent_id: undefined }],
      ['endpoint', { endpoint: 'api.example.com/no-scheme' }],
      ['endpoint', { endpoint: 'ftp://files.example.com/x' }],
      ['endpoint', { endpoint: 'http://exa mple.com/' }],
      ['method', { method: 'FETCH' }],
      ['amount', { amount: '-0.5' }],
      ['amount', { amount: '1e5' }],
      ['amount', { amount: 'NaN' }],
      ['amount', { amount: '' }],
      ['amount', { amount: '0.1234567890123456789' }],
      ['amount', { amount: 0.5 }],
      ['policy_evaluation', { policy_evaluation: 'denied' }],
      ['team', { team: 42 }],
      ['amount_raw', { amount_raw: '1.5' }],
      ['network', { network: 'not a network' }],
      ['network', { network: 'mars-mainnet' }],
      ['status_code', { status_code: 200.5 }],
      ['response_time_ms', { response_time_ms: -1 }],
      ['tags', { tags: 'llm' }],
      ['tags[1]', { tags: ['ok', 5] }],
      ['metadata', { metadata: [] }],
      ['metadata', { metadata: { blob: 'x'.repeat(9000) } }],
      ['id', { id: 'srv_spoofed' }],
      ['created_at', { created_at: true }],
      ['settled_at', { settled_at: 'soon' }],
    ];
    for (const [field, overrides] of invalid) {
      it(`reports ${field} = ${JSON.stringify(overrides[field] ?? overrides[field.replace(/\[\d+\]$/, '')])?.slice(0, 30)}`, async () => {
        const team = await newTeam();
        const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [event({ id: 'ok' }), event(overrides)] }).expect(200);
        expect(res.body.ingested).to.equal(1);
        expect(res.body.errors).to.have.length.greaterThan(0);
        expect(res.body.errors[0]).to.include({ index: 1, field });
        expect(res.body.errors[0].message).to.be.a('string').that.is.not.empty;
      });
    }

    it('a batch of only invalid records is a 400 with the record errors in details', async () => {
      const team = await newTeam();
      const res = await api().post('/v1/events').set(...team.auth).send({ events: [event({ amount: 'x' }), event({ method: 'nope' })] }).expect(400);
      const error = errorOf(res.body);
      expect(error.code).to.equal('validation_failed');
      expect(error.details).to.deep.equal([
        { index: 0, field: 'amount', message: (error.details as { message: string }[])[0]!.message },
        { index: 1, field: 'method', message: (error.details as { message: string }[])[1]!.message },
      ]);
      expect(await storedCount(team.teamId)).to.equal(0);
    });

    const envelopes: [string, unknown, string][] = [
      ['a body that is not JSON', '{"events": [', 'invalid_json'],
      ['an array instead of an object', [event()], 'validation_failed'],
      ['no events array', { records: [event()] }, 'validation_failed'],
      ['events that is not an array', { events: event() }, 'validation_failed'],
      ['zero events', { events: [] }, 'validation_failed'],
      ['more than 100 events', { events: Array.from({ length: 101 }, () => event()) }, 'validation_failed'],
    ];
    for (const [name, body, code] of envelopes) {
      it(`rejects ${name} with a 400 and stores nothing`, async () => {
        const team = await newTeam();
        const req = api().post('/api/v1/events').set(...team.auth).set('Content-Type', 'application/json');
        const res = await req.send(typeof body === 'string' ? body : JSON.stringify(body)).expect(400);
        expect(errorOf(res.body).code).to.equal(code);
        expect(await storedCount(team.teamId)).to.equal(0);
      });
    }
  });

  describe('exactly once', () => {
    it('an id repeated in one batch is stored once (with other content: a conflict, not stored either)', async () => {
      const team = await newTeam();
      const record = sdkRecord();
      const res = await api().post('/audit/batch').set(...team.auth).send({ records: [record, record, { ...record, amount: '5.000000' }] }).expect(200);
      expect(res.body).to.include({ ingested: 3, duplicates: 1, conflicts: 1 });
      expect(await storedCount(team.teamId)).to.equal(1);
    });

    it('a retried batch and a later batch with a known id store nothing again', async () => {
      const team = await newTeam();
      const batch = Array.from({ length: 50 }, () => sdkRecord());
      await api().post('/audit/batch').set(...team.auth).send({ records: batch }).expect(200);
      const retry = await api().post('/audit/batch').set(...team.auth).send({ records: batch }).expect(200);
      expect(retry.body).to.include({ ingested: 50, duplicates: 50 });
      const later = await api().post('/api/v1/events').set(...team.auth).send({ events: [batch[7], sdkRecord()] }).expect(200);
      expect(later.body).to.include({ ingested: 2, duplicates: 1 });
      expect(await storedCount(team.teamId)).to.equal(51);
    });

    it('the same batch sent concurrently (SDK retries racing) is stored once', async () => {
      const team = await newTeam();
      const batch = Array.from({ length: 40 }, () => sdkRecord());
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => api().post('/audit/batch').set(...team.auth).send({ records: batch })),
      );
      for (const a of answers) expect(a.status).to.equal(200);
      expect(answers.reduce((n, a) => n + a.body.duplicates, 0)).to.equal(5 * 40);
      expect(await storedCount(team.teamId)).to.equal(40);
    });

    it('keeps equal ids of two teams apart', async () => {
      const a = await newTeam();
      const b = await newTeam();
      const record = sdkRecord();
      await api().post('/audit/batch').set(...a.auth).send({ records: [record] }).expect(200);
      const res = await api().post('/audit/batch').set(...b.auth).send({ records: [record] }).expect(200);
      expect(res.body.duplicates).to.equal(0);
      expect(await storedCount(a.teamId)).to.equal(1);
      expect(await storedCount(b.teamId)).to.equal(1);
    });

    it('records without an id get distinct server ids', async () => {
      const team = await newTeam();
      const same = event({ created_at: Date.UTC(2026, 0, 1) });
      await api().post('/api/v1/events').set(...team.auth).send({ events: [same, same] }).expect(200);
      const ids = (await storedRows(team.teamId)).map((r) => r.id as string);
      expect(ids).to.have.length(2);
      expect(ids[0]).to.match(/^srv_/);
      expect(ids[0]).not.to.equal(ids[1]);
    });
  });

  describe('agents', () => {
    it('an unknown agent_id creates an agent of the team, once', async () => {
      const team = await newTeam();
      const other = await newTeam();
      await api().post('/api/v1/events').set(...team.auth).send({ events: [event({ agent_id: 'alpha' }), event({ agent_id: 'beta' })] }).expect(200);
      await api().post('/audit/batch').set(...team.auth).send({ records: [sdkRecord({ agent_id: 'alpha' })] }).expect(200);
      const { db } = testEnv().deps;
      const agents = await db.all('SELECT external_id, name, authorized_by, created_via FROM agents WHERE team_id = ? ORDER BY external_id', [team.teamId]);
      expect(agents).to.deep.equal([
        { external_id: 'alpha', name: 'alpha', authorized_by: null, created_via: 'events' },
        { external_id: 'beta', name: 'beta', authorized_by: null, created_via: 'events' },
      ]);
      const none = await db.get<{ n: number | string }>('SELECT count(*) AS n FROM agents WHERE team_id = ?', [other.teamId]);
      expect(Number(none!.n)).to.equal(0);
    });

    it('an invalid record creates no agent', async () => {
      const team = await newTeam();
      await api().post('/api/v1/events').set(...team.auth).send({ events: [event({ agent_id: 'ghost', amount: '-1' }), event({ agent_id: 'real' })] }).expect(200);
      const agents = await testEnv().deps.db.all('SELECT external_id FROM agents WHERE team_id = ?', [team.teamId]);
      expect(agents).to.deep.equal([{ external_id: 'real' }]);
    });
  });

});

// A full disk under the SQLite log (PostgreSQL refusing writes is a 503 too: test/service/cluster-faults.test.ts).
describe('ingest on SQLite', () => {
  describe('when the ingest log cannot be written', () => {
    it('answers 503 with Retry-After, acknowledges and claims nothing (disk full)', async () => {
      const team = await newTeam();
      const { registry } = testEnv();
      const max = registry.pragma('max_page_count', { simple: true }) as number;
      // A real SQLITE_FULL: no free page left, and the chunk (an overflow blob) needs new ones.
      registry.exec('VACUUM');
      registry.pragma(`max_page_count = ${registry.pragma('page_count', { simple: true }) as number}`);
      const batch = Array.from({ length: 20 }, (_, i) => event({ id: `full-${i}`, agent_id: 'lost', metadata: { pad: 'x'.repeat(1000) } }));
      try {
        const res = await api().post('/api/v1/events').set(...team.auth).send({ events: batch }).expect(503);
        expect(errorOf(res.body).code).to.equal('store_unavailable');
        expect(res.headers['retry-after']).to.match(/^\d+$/);
      } finally {
        registry.pragma(`max_page_count = ${max}`);
      }
      const agents = registry.prepare('SELECT count(*) AS n FROM agents WHERE team_id = ?').get(team.teamId);
      expect(agents).to.deep.equal({ n: 0 });
      // Nothing was claimed: the same records sent again are new, and stored once.
      const again = await api().post('/api/v1/events').set(...team.auth).send({ events: batch }).expect(200);
      expect(again.body).to.include({ ingested: 20, duplicates: 0 });
      expect(await storedCount(team.teamId)).to.equal(20);
    });
  });
});
