/**
 * A known id with other content (issue 28, item 3): a conflict is reported and not stored; the
 * same id with another tx_hash is another payment, stored under a derived id; the published SDK's
 * ids (one per agent, endpoint, millisecond and amount) make that the usual case in a tight loop.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import path from 'node:path';
import { ApiStorage, AuditLogger, MemoryStorage } from '@x402sentinel/x402';
import { contentPrint, derivedId, IngestLog, int64Text, type ContentPrint } from '../../src/ingest/log.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { api, listenOnce, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';
import { event, sdkRecord, storedCount, storedRows } from './fixtures.js';

type AuditRecord = Parameters<MemoryStorage['write']>[0];
type AuditQuery = Parameters<MemoryStorage['query']>[0];

const HOUR = 3_600_000;

async function conflictsCounted(): Promise<number> {
  const text = (await api().get('/metrics').expect(200)).text;
  return Number(/spendscope_ingest_records_total\{outcome="conflict"\} (\d+)/.exec(text)?.[1] ?? 0);
}

async function totalSpend(team: Awaited<ReturnType<typeof newTeam>>): Promise<string> {
  const now = Date.now();
  const range = { from: new Date(now - 2 * HOUR).toISOString(), to: new Date(now + HOUR).toISOString() };
  return (await api().get('/api/v1/analytics/summary').query(range).set(...team.auth).expect(200)).body.totalSpend;
}

describeOnEachRegistry('ingest: a known id with other content', () => {
  describe('is a conflict: reported, not stored', () => {
    const routes: [string, 'events' | 'records'][] = [
      ['/api/v1/events', 'events'],
      ['/v1/audit/batch', 'records'],
    ];
    for (const [route, key] of routes) {
      it(`POST ${route}: a conflicts count, a warning naming what differs, the metric, a log line; the first record stays`, async () => {
        const team = await newTeam();
        const created = Date.now() - 60_000;
        const first = sdkRecord({ id: 'pay-1', amount: '1.5', created_at: created });
        await api().post(route).set(...team.auth).send({ [key]: [first] }).expect(200);
        const before = await conflictsCounted();
        const secretEndpoint = 'https://api.example.com/v1/other?token=do-not-log-me';
        const res = await api()
          .post(route)
          .set(...team.auth)
          .send({
            [key]: [
              { ...first, amount: '1.500000' }, // the same value: a duplicate
              { ...first, amount: '2.5', endpoint: secretEndpoint }, // other content
              sdkRecord({ id: 'pay-2', created_at: created }),
            ],
          })
          .expect(200);
        expect(res.body).to.include({ ingested: 3, duplicates: 1, conflicts: 1 });
        expect(res.body.warnings).to.deep.equal([
          { index: 1, field: 'id', message: 'id "pay-1" was stored before with different content (endpoint, amount): this record was not stored' },
        ]);
        expect((await conflictsCounted()) - before).to.equal(1);
        const requestId = res.headers['x-request-id'];
        const line = testEnv().logLines.find((l) => String(l.msg).startsWith('ingest: records conflict') && (l.req as { id?: string } | undefined)?.id === requestId);
        expect(line, 'a warning in the log').to.not.equal(undefined);
        expect(line).to.deep.include({ level: 40, teamId: team.teamId, conflicts: 1, ids: ['pay-1'] });
        expect(JSON.stringify(line)).not.to.include('do-not-log-me');

        expect(await storedCount(team.teamId)).to.equal(2);
        const stored = (await api().get('/api/v1/audit/pay-1').set(...team.auth).expect(200)).body;
        expect(stored).to.include({ id: 'pay-1', amount: '1.5', endpoint: first.endpoint });
        expect(await totalSpend(team)).to.equal('1.501');
      });
    }

    it('within one batch: the second record of an id with other content, or a tx_hash on one side only', async () => {
      const team = await newTeam();
      const a = sdkRecord({ id: 'same-a', tx_hash: null });
      const b = sdkRecord({ id: 'same-b', tx_hash: null });
      const res = await api()
        .post('/v1/audit/batch')
        .set(...team.auth)
        .send({ records: [a, { ...a, agent_id: 'agent-9' }, a, b, { ...b, tx_hash: '0xfeed' }] })
        .expect(200);
      expect(res.body).to.include({ ingested: 5, duplicates: 1, conflicts: 2 });
      expect(res.body.warnings.map((w: { index: number; field: string; message: string }) => [w.index, w.field, w.message])).to.deep.equal([
        [1, 'id', 'id "same-a" was stored before with different content (agent_id): this record was not stored'],
        [4, 'id', 'id "same-b" was stored before with different content (tx_hash): this record was not stored'],
      ]);
      const rows = await storedRows(team.teamId);
      expect(rows.map((r) => [r.id, r.agent_id, r.tx_hash])).to.have.deep.members([
        ['same-a', 'agent-1', null],
        ['same-b', 'agent-1', null],
      ]);
      // The conflicting record's agent was not registered either.
      const agents = (await api().get('/api/v1/agents').set(...team.auth).expect(200)).body;
      expect(JSON.stringify(agents)).not.to.include('agent-9');
    });
  });

  describe('another tx_hash is another payment', () => {
    it('is stored under a derived id, reads back as sent, and its own retry is a duplicate', async () => {
      const team = await newTeam();
      const first = sdkRecord({ id: 'twice', tx_hash: '0xaaa1' });
      const second = { ...first, tx_hash: '0xaaa2' };
      const res = await api().post('/v1/audit/batch').set(...team.auth).send({ records: [first, second, second, { ...second, amount: '9' }] }).expect(200);
      expect(res.body).to.include({ ingested: 4, duplicates: 1, conflicts: 1 });
      const derived = `twice~tx~${crypto.createHash('sha256').update('0xaaa2').digest('hex').slice(0, 16)}`;
      expect(res.body.warnings).to.deep.equal([
        { index: 3, field: 'id', message: `id "twice" with this tx_hash (stored as "${derived}") was stored before with different content (amount): this record was not stored` },
      ]);
      const retry = await api().post('/api/v1/events').set(...team.auth).send({ events: [second, first] }).expect(200);
      expect(retry.body).to.include({ ingested: 2, duplicates: 2, conflicts: 0 });
      expect((await storedRows(team.teamId)).map((r) => r.id)).to.have.members(['twice', derived]);
      // GET /audit/:id of the id gives the first; every read gives the records as sent.
      expect((await api().get('/api/v1/audit/twice').set(...team.auth).expect(200)).body).to.deep.equal(first);
      expect((await api().post('/api/v1/audit/query').set(...team.auth).send({}).expect(200)).body).to.deep.equal([first, second]);
      expect(await totalSpend(team)).to.equal('0.002');
    });

    it('50 same-millisecond payments built by the published SDK (one id, 50 tx_hash): 50 stored and counted, a resend stores nothing', async () => {
      const team = await newTeam();
      const server = await listenOnce();
      const remote = new ApiStorage({ apiKey: team.apiKey, baseUrl: `${server.url}/v1`, batchSize: 1000, flushIntervalMs: 3_600_000 });
      try {
        const logger = new AuditLogger({ storage: remote });
        const realNow = Date.now;
        const millisecond = realNow() - 60_000;
        const records: AuditRecord[] = [];
        // The SDK stamps each record with Date.now(): a tight loop stays in one millisecond.
        Date.now = () => millisecond;
        try {
          for (let i = 0; i < 50; i++) {
            records.push(
              await logger.log({
                agent_id: 'loop-agent',
                team: 'research',
                human_sponsor: null,
                amount: '0.001000',
                amount_raw: '0',
                asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
                network: 'eip155:8453',
                scheme: 'exact',
                tx_hash: `0x${crypto.randomBytes(32).toString('hex')}`,
                payer_address: '0x1111111111111111111111111111111111111111',
                payee_address: '0x2222222222222222222222222222222222222222',
                facilitator: null,
                endpoint: 'https://api.example.com/v1/price?symbol=ETH',
                method: 'GET',
                status_code: 200,
                response_time_ms: 12,
                policy_id: null,
                policy_evaluation: 'allowed',
                budget_remaining: null,
                task_id: null,
                session_id: null,
                metadata: {},
                settled_at: millisecond,
                tags: [],
              } as never),
            );
          }
        } finally {
          Date.now = realNow;
        }
        expect(new Set(records.map((r) => r.id)).size, 'the SDK gave all 50 the same id').to.equal(1);
        await remote.flush();
        expect((remote as unknown as { useFallback: boolean }).useFallback, 'the SDK switched to local storage').to.equal(false);

        expect(await storedCount(team.teamId)).to.equal(50);
        expect(await totalSpend(team)).to.equal('0.05');
        // The SDK retries a batch: the same 50 again, on the wire, store nothing.
        const again = await api().post('/v1/audit/batch').set(...team.auth).send({ records }).expect(200);
        expect(again.body).to.include({ ingested: 50, duplicates: 50, conflicts: 0 });
        expect(await storedCount(team.teamId)).to.equal(50);

        // The SDK's own MemoryStorage keys records by id: it keeps 1 of these 50 (the last's
        // content). Its query code over every record is what the remote must answer.
        const plain = new MemoryStorage();
        for (const r of records) await plain.write(r);
        expect(await plain.count({})).to.equal(1);
        const every = new MemoryStorage();
        records.forEach((r, i) => (every as unknown as { records: Map<string, AuditRecord> }).records.set(`${r.id}#${i}`, r));
        const queries: AuditQuery[] = [{}, { agentId: 'loop-agent' }, { orderBy: 'amount', order: 'desc', offset: 5, limit: 10 }, { minAmount: '0.001', maxAmount: '0.001' }, { endpoint: 'price' }];
        for (const query of queries) {
          expect(await remote.query(query), JSON.stringify(query)).to.deep.equal(await every.query(query));
          expect(await remote.count(query), JSON.stringify(query)).to.equal(await every.count(query));
          expect(await remote.summarize(query), JSON.stringify(query)).to.deep.equal(await every.summarize(query));
        }
        expect((await remote.summarize({})).total_spend).to.equal('0.05');
        expect(await remote.getById(records[0]!.id)).to.deep.equal(records[0]);
        expect((remote as unknown as { useFallback: boolean }).useFallback).to.equal(false);
      } finally {
        remote.destroy();
        await server.close();
      }
    });
  });

});

// The log's own rules, on a SQLite registry of their own (the shared log has its in test/ingest/shared-log.test.ts).
describe('ingest: a known id with other content, in the log', () => {
  describe('the log (a registry of its own)', () => {
    const NOON = Date.UTC(2026, 10, 22, 12);
    const DAY = 86_400_000;
    let db: Registry;
    beforeEach(() => {
      db = openRegistry(tempDir('conflicts'));
      migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    });
    afterEach(() => db.close());
    const row = (overrides: Partial<Parameters<typeof contentPrint>[0]> = {}) => ({
      agent_id: 'a',
      endpoint: 'https://api.example.com/x',
      amount: '1.5',
      amount_raw: '',
      asset: 'USDC',
      network: 'eip155:8453',
      payee_address: '0xAbC',
      tx_hash: null,
      ...overrides,
    });
    const claim = (log: IngestLog, ids: string[], prints: ContentPrint[], at = NOON) => db.transaction(() => log.claim('team-a', ids, at, prints))();
    const columns = (table: string) => (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);

    it('upgrades day tables made before prints were kept (a record_fp column): their ids stay duplicates, never conflicts', () => {
      for (const table of ['ingest_ids_20261122', 'ingest_ids_20261120']) {
        db.exec(`CREATE TABLE ${table} (team_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (team_id, id)) WITHOUT ROWID`);
        db.prepare(`INSERT INTO ${table} VALUES ('team-a', ?)`).run(`old-${table.slice(-2)}`);
      }
      const log = new IngestLog(db, 7);
      expect(columns('ingest_ids_20261122')).to.include('record_fp');
      expect(columns('ingest_ids_20261120')).to.include('record_fp');
      const other = contentPrint(row({ amount: '7', tx_hash: '0x1' }));
      expect(claim(log, ['old-22', 'old-20', 'new'], [other, other, contentPrint(row())])).to.deep.equal([false, false, true]);
      expect(claim(log, ['new'], [other], NOON + 1000)).to.deep.equal([{ conflict: ['amount', 'tx_hash'] }]);
      // Reopened (as at a restart): nothing to add twice.
      log.stop();
      expect(() => new IngestLog(db, 7).stop()).not.to.throw();
    });

    it('prints are the ones stored before (run files and level-0 tables keep them): the same values, asked once or again', () => {
      // Computed by the release before the field hashes were remembered (5d0511f).
      const sdk = {
        agent_id: 'agent-1', endpoint: 'https://api.example.com/v1/search?q=spend', amount: '0.001000', amount_raw: '0',
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', network: 'eip155:8453', payee_address: '0x2222222222222222222222222222222222222222', tx_hash: null,
      };
      for (let i = 0; i < 2; i++) {
        expect(contentPrint(sdk)).to.deep.equal({ fp: '2127271123', txHash: null });
        expect(contentPrint({ ...sdk, amount: '0.001', asset: sdk.asset.toUpperCase().replace('0X', '0x'), tx_hash: '0xDEADBEEF' })).to.deep.equal({ fp: '915669244174898387', txHash: '0xdeadbeef' });
        expect(contentPrint({ ...sdk, agent_id: 'agent-2', endpoint: 'https://x.example/p', amount: '0', amount_raw: '1500', asset: 'WETH', network: 'base', payee_address: '' })).to.deep.equal({ fp: '3298748315', txHash: null });
      }
    });

    it('writes the 64 bits of a print as the signed decimal BigInt writes, at every edge and for 20,000 random pairs', () => {
      const asBigInt = (hi: number, lo: number) => BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
      const edges = [0, 1, 9_999, 10_000, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff];
      const pairs = edges.flatMap((hi) => edges.map((lo) => [hi, lo] as const));
      const random = crypto.randomBytes(8 * 20_000);
      for (let i = 0; i < 20_000; i++) pairs.push([random.readUInt32LE(8 * i), random.readUInt32LE(8 * i + 4)]);
      const wrong = pairs.filter(([hi, lo]) => int64Text(hi, lo) !== asBigInt(hi, lo));
      expect(wrong.slice(0, 5).map(([hi, lo]) => `${hi},${lo}: ${int64Text(hi, lo)} against ${asBigInt(hi, lo)}`)).to.deep.equal([]);
    });

    it('prints an amount by its value and hex in any case; a derived id is unique per (id, tx_hash) and at most 128 characters', () => {
      expect(contentPrint(row({ amount: '1.500000' }))).to.deep.equal(contentPrint(row({ amount: '01.5' })));
      expect(contentPrint(row({ payee_address: '0xabc' }))).to.deep.equal(contentPrint(row()));
      expect(contentPrint(row({ amount: '15' })).fp).not.to.equal(contentPrint(row()).fp);
      expect(contentPrint(row({ tx_hash: '0xAB' }))).to.deep.equal(contentPrint(row({ tx_hash: '0xab' })));
      expect(contentPrint(row({ tx_hash: '0x01' })).fp).not.to.equal(contentPrint(row({ tx_hash: '0x02' })).fp);
      expect(derivedId('abc', '0x01')).to.equal(`abc~tx~${crypto.createHash('sha256').update('0x01').digest('hex').slice(0, 16)}`);
      expect(derivedId('abc', '0x01')).not.to.equal(derivedId('abc', '0x02'));
      const long = 'i'.repeat(128);
      expect(derivedId(long, '0x01')).to.have.length.at.most(128);
      expect(derivedId(long, '0x01')).not.to.equal(derivedId(`${'i'.repeat(127)}j`, '0x01'));
    });

    it('finds the stored print in an older day: a retry is a duplicate, other content a conflict, another tx a payment', () => {
      const log = new IngestLog(db, 7);
      const paid = row({ tx_hash: '0x01' });
      expect(claim(log, ['p'], [contentPrint(paid)], NOON - 3 * DAY)).to.deep.equal([true]);
      const again = claim(log, ['p', 'p', 'p'], [contentPrint(paid), contentPrint({ ...paid, network: 'eip155:1' }), contentPrint({ ...paid, tx_hash: '0x02' })]);
      expect(again).to.deep.equal([false, { conflict: ['network'] }, { storedAs: derivedId('p', '0x02') }]);
    });
  });
});
