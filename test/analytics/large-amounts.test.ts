/**
 * Sums that cannot overflow: ingest accepts amounts up to 20 integer and 18 fractional digits
 * (Decimal(38,18)); two of them already overflow a Decimal(38,18) sum. Every aggregate route is
 * asked for the sum of such records and must give it exactly.
 */
import { expect } from 'chai';
import { newPolicy, type Team } from '../helpers/common.js';
import { api, newTeam, describeOnEachRegistry } from '../helpers/context.js';

const MAX = '99999999999999999999.999999999999999999';
const TWICE = '199999999999999999999.999999999999999998';
const THRICE = '299999999999999999999.999999999999999997';

describeOnEachRegistry('the largest accepted amount, summed, in every aggregate route', function () {
  this.timeout(60_000);
  let team: Team;
  const now = Date.now();
  const from = now - 3_600_000;
  const to = now + 60_000;

  before(async () => {
    team = await newTeam();
    await newPolicy(team, { name: 'whale limits', agents: ['whale'], limits: [{ kind: 'daily', amount: '1000' }, { kind: 'per_hour', amount: '1000' }], action: 'flag', active: true });
    const events = [0, 1, 2].map((i) => ({
      id: `max-${i}`,
      agent_id: i < 2 ? 'whale' : 'other',
      endpoint: 'https://api.example.com/v1/buy',
      method: 'POST',
      amount: MAX,
      asset: 'USDC',
      network: 'eip155:8453',
      category: 'data',
      created_at: now - 1000 * (i + 1),
    }));
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    expect(res.body.ingested, 'the policy evaluation summed them too').to.equal(3);
  });

  it('/audit/summarize', async () => {
    const res = await api().post('/api/v1/audit/summarize').set(...team.auth).send({}).expect(200);
    expect(res.body.total_spend).to.equal(THRICE);
    expect(res.body.max_payment).to.equal(MAX);
    expect(res.body.avg_payment).to.equal('99999999999999999999.999999'); // the SDK's 6-place average
    expect(res.body.by_agent.whale.spend).to.equal(TWICE);
  });

  it('/analytics/summary', async () => {
    const res = await api().get('/api/v1/analytics/summary').query({ from, to }).set(...team.auth).expect(200);
    expect(res.body.totalSpend).to.equal(THRICE);
    expect(res.body.avgPayment).to.equal(MAX);
    expect(res.body.maxPayment).to.equal(MAX);
    expect(res.body.byAgent.whale.spend).to.equal(TWICE);
  });

  it('/analytics/timeseries', async () => {
    const res = await api().get('/api/v1/analytics/timeseries').query({ from, to, granularity: 'hour' }).set(...team.auth).expect(200);
    const spends = (res.body.buckets ?? res.body).map((b: { spend: string }) => b.spend).filter((s: string) => s !== '0');
    expect(spends.length).to.be.within(1, 2);
    if (spends.length === 1) expect(spends[0]).to.equal(THRICE);
  });

  for (const path of ['by-agent', 'by-category', 'by-endpoint', 'by-network', 'by-asset']) {
    it(`/analytics/${path}`, async () => {
      const res = await api().get(`/api/v1/analytics/${path}`).query({ from, to }).set(...team.auth).expect(200);
      const spends = (res.body as { spend: string }[]).map((r) => r.spend);
      expect(spends[0]).to.equal(path === 'by-agent' ? TWICE : THRICE);
    });
  }

  it('/agents and /agents/:id', async () => {
    const one = await api().get('/api/v1/agents/whale').set(...team.auth).expect(200);
    expect(one.body.totalSpend).to.equal(TWICE);
    const list = await api().get('/api/v1/agents').set(...team.auth).expect(200);
    const whale = (list.body.data ?? list.body).find((a: { agentId: string }) => a.agentId === 'whale');
    expect(whale.totalSpend).to.equal(TWICE);
  });

  it('/team (usage this month)', async () => {
    const res = await api().get('/api/v1/team').set(...team.auth).expect(200);
    expect(res.body.usage.spend).to.equal(THRICE);
  });
});
