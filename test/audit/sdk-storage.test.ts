/**
 * Compatibility of the remote storage with the published SDK (@x402sentinel/x402 0.2.0): its
 * ApiStorage, pointed at a real server, must answer query, summarize, count and getById exactly
 * as its own MemoryStorage fed the same records.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import fc from 'fast-check';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiStorage, MemoryStorage } from '@x402sentinel/x402';
import type { Team } from '../helpers/common.js';
import { api, errorOf, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

type AuditRecord = Parameters<MemoryStorage['write']>[0];
type AuditQuery = Parameters<MemoryStorage['query']>[0];

/** A seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ENDPOINTS = [
  'https://api.example.com/v1/search?q=spend',
  'https://api.example.com/v1/Search?q=spend',
  'https://api.example.com/v1/search?q=épice',
  'https://data.example.org/prices/eth',
  'https://Data.example.org/prices/btc',
  'http://weather.example.net/forecast',
  'https://api.example.com/v1/fetch',
];

function makeRecords(count: number): AuditRecord[] {
  const rnd = random(7);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const t0 = Date.now() - 2 * 86_400_000;
  return Array.from({ length: count }, (_, i) => {
    const agent = `agent-${Math.floor(rnd() * 4)}`;
    const endpoint = pick(ENDPOINTS);
    // Ties on purpose: some records share a time, some an amount.
    const created = t0 + Math.floor(i / 3) * 61_000;
    const amount = rnd() < 0.15 ? '0.000000' : (Math.floor(rnd() * 5_000) / 1e6).toFixed(6);
    const blocked = rnd() < 0.1;
    return {
      id: crypto.createHash('sha256').update(`${agent}|${endpoint}|${created}|${amount}|${i}`).digest('hex').slice(0, 16),
      agent_id: agent,
      team: pick(['research', 'ops', null, '(none)']),
      human_sponsor: rnd() < 0.5 ? 'ana@example.com' : null,
      amount,
      amount_raw: '0',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      network: pick(['eip155:8453', 'base', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp']),
      scheme: 'exact',
      tx_hash: blocked ? null : `0x${i.toString(16).padStart(8, '0')}`,
      payer_address: rnd() < 0.2 ? '' : '0x1111111111111111111111111111111111111111',
      payee_address: '0x2222222222222222222222222222222222222222',
      facilitator: rnd() < 0.5 ? 'https://x402.org/facilitator' : null,
      endpoint,
      method: pick(['GET', 'POST', 'post']),
      status_code: blocked ? 0 : pick([200, 200, 402, 500]),
      response_time_ms: Math.floor(rnd() * 900),
      policy_id: blocked ? 'max-per-call' : null,
      policy_evaluation: blocked ? 'blocked' : rnd() < 0.1 ? 'flagged' : 'allowed',
      budget_remaining: rnd() < 0.5 ? '9.500000' : null,
      task_id: rnd() < 0.3 ? `task-${i % 7}` : null,
      session_id: rnd() < 0.3 ? crypto.randomUUID() : null,
      metadata: blocked ? { violation_type: 'per_call', violation_limit: '0.004000' } : {},
      created_at: created,
      settled_at: blocked || rnd() < 0.3 ? null : created + 1500,
      tags: pick([[], ['search'], ['llm', 'search'], ['data'], ['retry', 'error']]),
    } as AuditRecord;
  });
}

describeOnEachRegistry('remote storage for the published SDK (ApiStorage against its MemoryStorage)', function () {
  this.timeout(60_000);
  let server: http.Server;
  let base: string;
  let team: Team;
  let remote: ApiStorage;
  const local = new MemoryStorage();
  const records = makeRecords(320);
  const fellBack = () => (remote as unknown as { useFallback: boolean }).useFallback;

  before(async () => {
    server = http.createServer(testEnv().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    team = await newTeam('sdk');
    remote = new ApiStorage({ apiKey: team.apiKey, baseUrl: `${base}/api/v1`, batchSize: 50, flushIntervalMs: 3_600_000 });
    for (const r of records) {
      await remote.write(r);
      await local.write(r);
    }
    await remote.flush();
    expect(fellBack(), 'the SDK switched to local storage while writing').to.equal(false);
    // The SDK tries each batch three times: a batch that arrives again changes nothing.
    for (const batch of [records.slice(0, 50), records.slice(100, 150)]) {
      const res = await api().post('/audit/batch').set(...team.auth).send({ records: batch }).expect(200);
      expect(res.body.duplicates).to.equal(50);
    }
  });
  after(async () => {
    remote.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const t0 = Date.now() - 2 * 86_400_000;
  const queries: [string, AuditQuery][] = [
    ['everything, storage order', {}],
    ['one agent', { agentId: 'agent-2' }],
    ['a team label', { team: 'research' }],
    ['the label "(none)"', { team: '(none)' }],
    ['an endpoint substring, case-sensitive', { endpoint: 'search' }],
    ['another case', { endpoint: 'Search' }],
    ['amount bounds, inclusive', { minAmount: '0.001000', maxAmount: '0.003' }],
    ['zero amounts', { maxAmount: '0' }],
    ['a time window, inclusive', { startTime: t0 + 61_000 * 10, endTime: t0 + 61_000 * 40 }],
    ['statuses', { status: ['flagged', 'blocked'] }],
    ['any of some tags', { tags: ['llm', 'data'] }],
    ['empty filters filter nothing', { agentId: '', endpoint: '', status: [], tags: [], startTime: 0 }],
    ['created_at ascending', { orderBy: 'created_at' }],
    ['created_at descending, ties in storage order', { orderBy: 'created_at', order: 'desc' }],
    ['amount ascending', { orderBy: 'amount', order: 'asc' }],
    ['amount descending, a page', { orderBy: 'amount', order: 'desc', offset: 20, limit: 25 }],
    ['endpoint as localeCompare sorts', { orderBy: 'endpoint' }],
    ['endpoint descending', { orderBy: 'endpoint', order: 'desc' }],
    ['a page without order', { offset: 7, limit: 13 }],
    ['limit 0', { limit: 0 }],
    ['an offset past the end', { offset: 1000 }],
    ['filters, order and a page together', { agentId: 'agent-1', status: ['allowed'], orderBy: 'endpoint', order: 'desc', offset: 3, limit: 10 }],
    ['nothing matches', { agentId: 'nobody' }],
  ];

  for (const [name, query] of queries) {
    it(`query, count and summarize agree: ${name}`, async () => {
      expect(await remote.query(query)).to.deep.equal(await local.query(query));
      expect(await remote.count(query)).to.equal(await local.count(query));
      expect(await remote.summarize(query)).to.deep.equal(await local.summarize(query));
      expect(fellBack(), 'the SDK switched to local storage').to.equal(false);
    });
  }

  it('getById returns each record exactly as sent, and null for an unknown id', async () => {
    for (const r of records.filter((_, i) => i % 29 === 0)) expect(await remote.getById(r.id)).to.deep.equal(r);
    expect(await remote.getById('0000000000000000')).to.equal(null);
    expect(fellBack()).to.equal(false);
  });

  it('answers the same under /v1 and the bare site', async () => {
    for (const prefix of ['/v1', '']) {
      const storage = new ApiStorage({ apiKey: team.apiKey, baseUrl: `${base}${prefix}`, flushIntervalMs: 3_600_000 });
      try {
        expect(await storage.count({ agentId: 'agent-0' })).to.equal(await local.count({ agentId: 'agent-0' }));
        expect(await storage.getById(records[5]!.id)).to.deep.equal(records[5]);
        expect((storage as unknown as { useFallback: boolean }).useFallback).to.equal(false);
      } finally {
        storage.destroy();
      }
    }
  });

  it('another team sees none of it', async () => {
    const other = await newTeam();
    expect((await api().post('/api/v1/audit/count').set(...other.auth).send({}).expect(200)).body).to.deep.equal({ count: 0 });
    expect((await api().get(`/api/v1/audit/${records[0]!.id}`).set(...other.auth).expect(200)).body).to.equal(null);
  });

  it('a body that is not a JSON object is a 400 (the only query refused)', async () => {
    for (const body of ['[]', '[{"agentId":"agent-1"}]', 'null', '"x"', '42']) {
      for (const path of ['/api/v1/audit/query', '/v1/audit/summarize', '/audit/count']) {
        const res = await api().post(path).set(...team.auth).set('Content-Type', 'application/json').send(body).expect(400);
        expect(errorOf(res.body).code).to.equal('validation_failed');
      }
    }
  });

  /**
   * Values the SDK's types do not expect, each answered as MemoryStorage answers it: JavaScript's
   * truthiness, `===`, String.prototype.includes, ToNumber in `<`, `+` and slice's negative indexes.
   */
  const unexpected: [string, object][] = [
    ['order "DESC" is ascending (only "desc" reverses)', { orderBy: 'amount', order: 'DESC' }],
    ['status ["BLOCKED"] matches nothing (case-sensitive)', { status: ['BLOCKED'] }],
    ['a string status matches the values it contains', { status: 'flagged,blocked' }],
    ['a string status "BLOCKED" matches nothing', { status: 'BLOCKED' }],
    ['a negative limit counts from the end', { limit: -5 }],
    ['a negative offset counts from the end', { offset: -7, limit: 3 }],
    ['fractional limit and offset are truncated', { offset: 2.7, limit: 4.5 }],
    ['a string offset is concatenated: "2" + 3 is 23', { offset: '2', limit: 3 }],
    ['an unknown orderBy keeps storage order', { orderBy: 'agent', order: 'desc' }],
    ['a non-numeric startTime filters nothing', { startTime: 'yesterday' }],
    ['a numeric-string endTime is a number', { endTime: String(t0 + 61_000 * 20) }],
    ['an endTime in an array is its number', { endTime: [t0 + 61_000 * 20] }],
    ['a number minAmount cannot be parsed: nothing matches', { minAmount: 5 }],
    ['"1e3" cannot be parsed: nothing matches', { maxAmount: '1e3' }],
    ['a hex amount is what BigInt makes of it', { maxAmount: '0x0' }],
    ['a number agentId equals no record', { agentId: 5 }],
    ['an endpoint number is looked for as text', { endpoint: 1 }],
    ['tags as a string cannot be searched: nothing matches', { tags: 'search' }],
    ['tags without strings match nothing', { tags: [1, null] }],
    ['unknown fields are ignored', { agent: 'x', verbose: true }],
    ['a time window echoed as sent in the summary', { startTime: '0', endTime: null }],
  ];
  for (const [name, query] of unexpected) {
    it(`an unexpected query answers as MemoryStorage does: ${name}`, async () => {
      await expectSameAnswers(query as AuditQuery);
    });
  }

  /**
   * Remote and MemoryStorage agree on the query as it arrives (after JSON). Where MemoryStorage
   * throws (it can only once a record reaches the bad filter), the remote answers as if nothing
   * matched, and the SDK keeps using it.
   */
  async function expectSameAnswers(query: AuditQuery) {
    const sent = JSON.parse(JSON.stringify(query)) as AuditQuery;
    const attempt = async <T>(f: () => Promise<T>) => f().then((value) => ({ value }), () => undefined);
    const expected = {
      query: await attempt(() => local.query(sent)),
      count: await attempt(() => local.count(sent)),
      summarize: await attempt(() => local.summarize(sent)),
    };
    const actual = { query: await remote.query(query), count: await remote.count(query), summarize: await remote.summarize(query) };
    const what = JSON.stringify(query);
    expect(fellBack(), `the SDK switched to local storage on ${what}`).to.equal(false);
    expect(actual.query, what).to.deep.equal(expected.query ? expected.query.value : []);
    expect(actual.count, what).to.equal(expected.count ? expected.count.value : 0);
    if (expected.summarize) expect(actual.summarize, what).to.deep.equal(expected.summarize.value);
    else expect(actual.summarize.total_transactions, what).to.equal(0);
  }

  it('generated queries, expected values or not, answer as MemoryStorage does (fast-check)', async function () {
    this.timeout(300_000);
    const some = <T>(...values: T[]) => fc.constantFrom(...values);
    const scalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer({ min: -400, max: 400 }), fc.double({ noNaN: true, min: -1e3, max: 1e3 }), fc.string({ maxLength: 6 }));
    const json = fc.oneof(
      { weight: 4, arbitrary: scalar },
      { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
      { weight: 1, arbitrary: fc.dictionary(some('a', 'length', 'toString', 'valueOf'), scalar, { maxKeys: 2 }) },
    );
    const time = (i: number) => t0 + 61_000 * i;
    const field = <T>(expected: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: expected }, { weight: 1, arbitrary: json });
    const query = fc.record(
      {
        agentId: field(some('agent-0', 'agent-1', 'agent-3', '', 'nobody')),
        team: field(some('research', 'ops', '(none)', '')),
        endpoint: field(some('search', 'Search', 'example.', 'épice', '/v1/', '')),
        minAmount: field(some('0', '0.001', '0.0025', '0.004999', '0.002000', ' 0.001 ', '1e3', '-1', '0.0000001', '0x1', '')),
        maxAmount: field(some('0', '0.001', '0.0025', '0.003', '5', '.5', '0.', '')),
        startTime: field(fc.oneof(fc.integer({ min: -5, max: 120 }).map(time), fc.integer({ min: 0, max: 120 }).map((i) => String(time(i))), fc.double({ min: time(0), max: time(110), noNaN: true }))),
        endTime: field(fc.oneof(fc.integer({ min: -5, max: 120 }).map(time), fc.integer({ min: 0, max: 120 }).map((i) => [time(i)]))),
        status: field(some<unknown>(['blocked'], ['flagged', 'blocked'], ['BLOCKED'], 'BLOCKED', 'blocked', 'flagged,allowed', [], [1], { length: 1 })),
        tags: field(some<unknown>(['search'], ['llm', 'data'], [], 'search', [1], ['retry', 7])),
        limit: field(fc.oneof(fc.integer({ min: -30, max: 400 }), fc.double({ min: -30, max: 60, noNaN: true }), some('5', '-3', 'abc', '1e1'))),
        offset: field(fc.oneof(fc.integer({ min: -30, max: 400 }), fc.double({ min: -30, max: 60, noNaN: true }), some('5', '-3', 'abc', '0x4'))),
        orderBy: field(some('created_at', 'amount', 'endpoint', 'agent', 'AMOUNT', '')),
        order: field(some('asc', 'desc', 'DESC', 'up', '')),
      },
    );
    // A few fields at a time, so that filters leave records to sort and page.
    const keys = ['agentId', 'team', 'endpoint', 'minAmount', 'maxAmount', 'startTime', 'endTime', 'status', 'tags', 'limit', 'offset', 'orderBy', 'order'] as const;
    const few = fc
      .tuple(query, fc.shuffledSubarray([...keys], { minLength: 0, maxLength: 4 }))
      .map(([q, picked]) => Object.fromEntries(picked.map((k) => [k, q[k]])));
    await fc.assert(fc.asyncProperty(few, async (q) => expectSameAnswers(q as AuditQuery)), { numRuns: 200 });
  });
});

describeOnEachRegistry('records sent without the SDK fields read back in the SDK shape', () => {
  it('a record sent without amount_raw reads back with "0", as the SDK sends it; one sent with a value keeps it', async () => {
    const team = await newTeam();
    const base = { agent_id: 'a1', endpoint: 'https://api.example.com/x', method: 'POST', amount: '0.25', created_at: Date.now() - 1000 };
    await api()
      .post('/api/v1/events')
      .set(...team.auth)
      .send({ events: [{ ...base, id: 'no-raw' }, { ...base, id: 'with-raw', amount_raw: '250000', asset: 'USDC' }] })
      .expect(200);
    const noRaw = await api().get('/api/v1/audit/no-raw').set(...team.auth).expect(200);
    expect(noRaw.body.amount_raw).to.equal('0');
    const withRaw = await api().get('/api/v1/audit/with-raw').set(...team.auth).expect(200);
    expect(withRaw.body.amount_raw).to.equal('250000');
    const queried = await api().post('/api/v1/audit/query').set(...team.auth).send({}).expect(200);
    const byId = new Map((queried.body as { id: string; amount_raw: string }[]).map((r) => [r.id, r.amount_raw]));
    expect(Object.fromEntries(byId)).to.deep.equal({ 'no-raw': '0', 'with-raw': '250000' });
  });
});
