/**
 * JSON-RPC batches at /mcp pay their way: each call costs what its route costs over HTTP, counted
 * before any runs (the calls beyond the key's buckets are rate_limited and run nothing); a request
 * runs a bounded number of calls at once; a key revoked while a batch runs gets nothing more.
 */
import { expect } from 'chai';
import { CALLS_AT_ONCE } from '../../src/mcp/call-slots.js';
import { askAbove, keyWith, newPolicy, sleep, type Team } from '../helpers/common.js';
import { api, describeOnEachRegistry, errorOf, listenOnce, newTeam, testEnv } from '../helpers/context.js';
import { answer, ENDPOINT, registerAgent, sendBatch, toolError, type BatchAnswer } from './client.js';

/** The results of calls first..last (1-based ids), in order. */
const resultsOf = (batch: BatchAnswer, first: number, last: number) => Array.from({ length: last - first + 1 }, (_, i) => batch.results.get(first + i)!);

/** A team whose agent bot needs a person's approval for payments above 5, and `count` such payments pending. */
async function pendingPayments(label: string, count: number): Promise<{ team: Team; ids: string[] }> {
  const team = await newTeam(label);
  await registerAgent(team, 'bot');
  await newPolicy(team, askAbove('5'));
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = (await api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: 'bot', endpoint: ENDPOINT, amount: '9' }).expect(200)).body;
    expect(body.status).to.equal('pending');
    ids.push(body.id);
  }
  return { team, ids };
}

async function countOf(team: Team, path: string): Promise<number> {
  return (await api().get(path).set(...team.auth).expect(200)).body.data.length;
}

describeOnEachRegistry('MCP at /mcp: batches', function () {
  this.timeout(60_000);
  let server: { url: string; close: () => Promise<void> };

  before(async () => {
    server = await listenOnce();
  });
  after(async () => {
    await server?.close();
  });

  it('each call costs a request token: of a batch over the bucket, the calls it holds run and the rest are rate_limited, running nothing', async () => {
    const team = await newTeam('mcp-batch');
    await registerAgent(team, 'bot');
    const key = await keyWith(team, { scopes: ['ingest', 'read'], rateLimit: { requests_per_second: 3 } });
    const batch = await sendBatch(
      server.url,
      key.apiKey,
      Array.from({ length: 8 }, (_, i) => ({ name: 'authorize_payment', arguments: { agent_id: 'bot', endpoint: ENDPOINT, amount: '1', idempotency_key: `batch-${i}` } })),
    );
    expect(batch.status).to.equal(200);
    expect(batch.results.size).to.equal(8);
    for (const result of resultsOf(batch, 1, 3)) expect(answer(result)).to.include({ decision: 'approved', status: 'held' });
    for (const result of resultsOf(batch, 4, 8)) {
      const refused = toolError(result);
      expect(refused.code).to.equal('rate_limited');
      expect(refused.message).to.match(/over its limit of 3 requests a second; retry after \d+ s/);
      expect(refused.details).to.deep.equal([{ field: 'rate_limit.requests_per_second', message: 'is 3' }]);
    }
    expect(batch.headers.get('ratelimit')).to.match(/^"requests";r=0;t=\d+$/);
    // Only the three admitted calls held anything.
    expect(await countOf(team, '/api/v1/authorizations')).to.equal(3);
  });

  it('record_payment costs a request token and a records token: the calls beyond either bucket store nothing', async () => {
    const team = await newTeam('mcp-batch-records');
    await registerAgent(team, 'bot');
    const record = (id: string) => ({ name: 'record_payment', arguments: { id, agent_id: 'bot', endpoint: ENDPOINT, method: 'GET', amount: '1' } });
    const fewRecords = await keyWith(team, { scopes: ['ingest'], rateLimit: { requests_per_second: 100, records_per_second: 2 } });
    const byRecords = await sendBatch(server.url, fewRecords.apiKey, ['a1', 'a2', 'a3', 'a4'].map(record));
    for (const result of resultsOf(byRecords, 1, 2)) expect(answer(result)).to.include({ ingested: 1, duplicates: 0 });
    for (const result of resultsOf(byRecords, 3, 4)) expect(toolError(result).details).to.deep.equal([{ field: 'rate_limit.records_per_second', message: 'is 2' }]);
    const fewRequests = await keyWith(team, { scopes: ['ingest'], rateLimit: { requests_per_second: 2, records_per_second: 100 } });
    const byRequests = await sendBatch(server.url, fewRequests.apiKey, ['b1', 'b2', 'b3', 'b4'].map(record));
    for (const result of resultsOf(byRequests, 1, 2)) expect(answer(result)).to.include({ ingested: 1, duplicates: 0 });
    for (const result of resultsOf(byRequests, 3, 4)) expect(toolError(result).details).to.deep.equal([{ field: 'rate_limit.requests_per_second', message: 'is 2' }]);
    const stored = (await api().get('/api/v1/analytics/summary').set(...team.auth).expect(200)).body;
    expect(stored).to.include({ count: 4, totalSpend: '4' });
  });

  it('a batch of more than 100 messages is a 400 naming the body, and costs nothing', async () => {
    const team = await newTeam('mcp-batch-large');
    await registerAgent(team, 'bot');
    const key = await keyWith(team, { scopes: ['read'], rateLimit: { requests_per_second: 1 } });
    const large = await sendBatch(server.url, key.apiKey, Array.from({ length: 101 }, () => ({ name: 'get_budget_status', arguments: {} })));
    expect(large.status).to.equal(400);
    expect(errorOf(large.body)).to.deep.include({ code: 'validation_failed', details: [{ field: 'body', message: 'has more than 100 messages' }] });
    const one = await sendBatch(server.url, key.apiKey, [{ name: 'get_budget_status', arguments: {} }]);
    expect(answer(one.results.get(1)!).data).to.deep.equal([]);
  });

  it(`runs at most ${CALLS_AT_ONCE} calls of a batch at once`, async () => {
    const { team, ids } = await pendingPayments('mcp-batch-slots', CALLS_AT_ONCE + 2);
    const key = await keyWith(team, { scopes: ['read'] });
    const parked = testEnv().deps.decisionWaiters.size;
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, testEnv().deps.decisionWaiters.size - parked)), 5);
    try {
      // Nobody decides: each call waits its second, as many at once as the request runs.
      const batch = await sendBatch(server.url, key.apiKey, ids.map((id) => ({ name: 'wait_for_decision', arguments: { authorization_id: id, wait_s: 1 } })));
      for (const result of resultsOf(batch, 1, ids.length)) expect(answer(result).status).to.equal('pending');
    } finally {
      clearInterval(sampler);
    }
    expect(most).to.equal(CALLS_AT_ONCE);
  });

  it('a key revoked while its batch runs: the woken waits and the calls still queued are unauthorized, not answered', async () => {
    const { team, ids } = await pendingPayments('mcp-batch-revoked', CALLS_AT_ONCE);
    const key = await keyWith(team, { scopes: ['read'] });
    const parked = testEnv().deps.decisionWaiters.size;
    const calls = [
      ...ids.map((id) => ({ name: 'wait_for_decision', arguments: { authorization_id: id, wait_s: 30 } })),
      { name: 'get_budget_status', arguments: { agent_id: 'bot' } },
    ];
    const running = sendBatch(server.url, key.apiKey, calls);
    for (let i = 0; testEnv().deps.decisionWaiters.size - parked < CALLS_AT_ONCE && i < 400; i++) await sleep(25);
    expect(testEnv().deps.decisionWaiters.size - parked, 'every slot waits').to.equal(CALLS_AT_ONCE);
    await api().delete(`/api/v1/keys/${key.id}`).set(...team.auth).expect(204);
    for (const id of ids) await api().post(`/api/v1/authorizations/${id}/approve`).set(...team.auth).send({}).expect(200);
    const batch = await running;
    expect(batch.results.size).to.equal(calls.length);
    for (const result of resultsOf(batch, 1, calls.length)) {
      expect(toolError(result)).to.include({ code: 'unauthorized', message: 'Invalid, revoked or expired API key' });
    }
  });
});
