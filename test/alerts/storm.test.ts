/**
 * A breach storm: thousands of active policies broken by every record of a batch. The batch is
 * answered without stalling the service (/healthz polled beside it), and becomes a bounded number
 * of alerts (and webhook events) whose counts add up to every breach.
 */
import { expect } from 'chai';
import { createPolicies, type PolicyInput } from '../../src/policies/repository.js';
import { Receiver } from '../webhooks/receiver.js';
import { sdkId, sleep, type Team } from '../helpers/common.js';
import { api, listenOnce, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';

/** Far above what the batch or a /healthz takes on any machine: only a stall crosses it. */
const STALL_MS = 5_000;
const HOSTS = ['api.openai.com', 'api.anthropic.com', 'api.exa.ai', 'api.tavily.com'];
const ENDPOINTS = ['https://api.openai.com/v1/chat/completions', 'https://api.anthropic.com/v1/messages', 'https://api.exa.ai/search', 'https://api.tavily.com/search'];

/**
 * `n` team-wide policies (per_call 4.5, per_hour 50, daily 500, per_endpoint 100 on one of four
 * hosts), written to the registry directly: the API's bound on active policies is 1,000 here.
 */
async function teamWidePolicies(team: Team, n: number): Promise<void> {
  const inputs = Array.from({ length: n }, (_, i) => ({
    name: `storm ${i}`,
    agents: [],
    limits: [
      { kind: 'per_call', amount: '4.5' },
      { kind: 'per_hour', amount: '50' },
      { kind: 'daily', amount: '500' },
      { kind: 'per_endpoint', amount: '100', endpoint: HOSTS[i % HOSTS.length] },
    ],
    action: i % 2 ? 'block' : 'flag',
    active: true,
    timezone: null,
  }) satisfies PolicyInput);
  await testEnv().deps.db.transaction((sql) => createPolicies(sql, team.teamId, inputs, testEnv().deps.policyRevisions));
}

/** 100 records of amount 5 from 100 agents, SDK-shaped ids (16 random hex). */
const breakingBatch = (now: number) =>
  Array.from({ length: 100 }, (_, i) => ({
    id: sdkId(),
    agent_id: `agent-${i}`,
    endpoint: ENDPOINTS[i % ENDPOINTS.length],
    method: 'POST',
    amount: '5',
    created_at: now,
  }));

interface AlertBody {
  type: string;
  kind: string;
  severity: string;
  count: number;
  agentId: string;
  policyId: string | null;
  details: Record<string, unknown>;
  sampleEventIds: string[];
  message: string;
}

async function allAlerts(team: Team): Promise<AlertBody[]> {
  const found: AlertBody[] = [];
  let cursor: string | null = null;
  do {
    const res: { body: { data: AlertBody[]; next_cursor: string | null } } = await api().get(`/api/v1/alerts?limit=200${cursor ? `&cursor=${cursor}` : ''}`).set(...team.auth).expect(200);
    found.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return found;
}

describeOnEachRegistry('a breach storm', function () {
  this.timeout(120_000);

  // How fast (the batch's latency, /healthz beside it) is measured by npm run bench:policies.
  it('2,000 team-wide policies: a breaking batch of 100 records is answered, and every /healthz beside it, none stalled', async () => {
    const team = await newTeam('storm');
    await teamWidePolicies(team, 2_000);
    const server = await listenOnce();
    try {
      // Warm the connections (and the team's compiled policies are not warm: the batch pays for them).
      await fetch(`${server.url}/healthz`);
      const health: { status: number; ms: number }[] = [];
      let running = true;
      const poll = (async () => {
        while (running) {
          const t0 = performance.now();
          const res = await fetch(`${server.url}/healthz`);
          await res.arrayBuffer();
          health.push({ status: res.status, ms: performance.now() - t0 });
          await sleep(10);
        }
      })();
      const t0 = performance.now();
      const res = await fetch(`${server.url}/api/v1/events`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${team.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ events: breakingBatch(Date.now()) }),
      });
      const body = (await res.json()) as { ingested: number; alerts_created: number };
      const took = performance.now() - t0;
      // A few polls after the answer too: the group's flush and the next turns.
      await sleep(100);
      running = false;
      await poll;
      expect(res.status).to.equal(200);
      expect(body).to.include({ ingested: 100, alerts_created: 101 });
      expect(took, 'batch answered (ms)').to.be.below(STALL_MS);
      expect(health.length).to.be.at.least(3);
      expect(health.map((h) => h.status), '/healthz answers').to.deep.equal(health.map(() => 200));
      expect(Math.max(...health.map((h) => h.ms)), `/healthz answered (ms): ${health.map((h) => h.ms.toFixed(0)).join(', ')}`).to.be.below(STALL_MS);
    } finally {
      await server.close();
    }
  });

  it('becomes a bounded number of alerts and webhook events whose counts add up to every breach, batch after batch', async () => {
    const team = await newTeam('storm');
    const receiver = await new Receiver().start();
    try {
      await api().post('/api/v1/webhooks').set(...team.auth).send({ url: receiver.url(), events: ['alert.opened', 'alert.escalated'] }).expect(201);
      await teamWidePolicies(team, 2_000);
      // MAX_ALERTS_PER_COMMIT, at its default in the test environment.
      const bound = 100;
      const first = await api().post('/api/v1/events').set(...team.auth).send({ events: breakingBatch(Date.now()) }).expect(200);
      // Each record breaks the per_call limit of every policy: 200,000 breaches, nothing else.
      expect(first.body.alerts_created).to.equal(bound + 1);
      let alerts = await allAlerts(team);
      expect(alerts).to.have.length(bound + 1);
      const storm = alerts.find((a) => a.kind === 'alert_storm')!;
      expect(storm).to.include({ type: 'system', severity: 'critical', agentId: '', policyId: null, count: 200_000 - bound });
      expect(storm.details).to.deep.include({ occurrences: 200_000 - bound, byKind: { per_call: 200_000 - bound }, records: 100, agents: 100, individualAlerts: bound, maxAlertsPerCommit: bound });
      expect(storm.details.sampleAgents).to.have.length(10);
      expect(storm.details.samplePolicies).to.have.length(10);
      expect(storm.sampleEventIds).to.have.length(10);
      expect(storm.message).to.match(/^Alert storm: .*199,900 further occurrences \(199,900 per_call\) from 100 records of 100 agents/);
      const individual = alerts.filter((a) => a !== storm);
      expect(individual.every((a) => a.type === 'violation' && a.kind === 'per_call' && a.count === 1)).to.equal(true);
      expect(individual.reduce((n, a) => n + a.count, 0) + storm.count).to.equal(200_000);

      // The storm goes on: the same alerts are updated, none is opened, and the counts still add up.
      const second = await api().post('/api/v1/events').set(...team.auth).send({ events: breakingBatch(Date.now()) }).expect(200);
      expect(second.body.alerts_created).to.equal(0);
      alerts = await allAlerts(team);
      expect(alerts).to.have.length(bound + 1);
      expect(alerts.reduce((n, a) => n + a.count, 0)).to.equal(400_000);
      expect(alerts.find((a) => a.kind === 'alert_storm')!.count).to.equal(2 * (200_000 - bound));

      // One webhook event per alert opened, not one per breach.
      const { n } = (await testEnv().deps.db.get<{ n: number | string }>('SELECT count(*) AS n FROM webhook_deliveries WHERE team_id = ?', [team.teamId]))!;
      expect(Number(n)).to.equal(bound + 1);
    } finally {
      await receiver.stop();
    }
  });

  it('the bound is exact: 100 distinct breaches in a commit are 100 alerts; the 101st is counted into the storm alert', async () => {
    // 50 policies, two records each: 100 breaches, each its own alert.
    const under = await newTeam('storm');
    await teamWidePolicies(under, 50);
    const two = breakingBatch(Date.now()).slice(0, 2);
    expect((await api().post('/api/v1/events').set(...under.auth).send({ events: two }).expect(200)).body.alerts_created).to.equal(100);
    const some = await allAlerts(under);
    expect(some).to.have.length(100);
    expect(some.some((a) => a.kind === 'alert_storm')).to.equal(false);

    // 101 policies, one record: 100 alerts and the storm alert, counting one.
    const over = await newTeam('storm');
    await teamWidePolicies(over, 101);
    const one = breakingBatch(Date.now()).slice(0, 1);
    expect((await api().post('/api/v1/events').set(...over.auth).send({ events: one }).expect(200)).body.alerts_created).to.equal(101);
    const alerts = await allAlerts(over);
    expect(alerts).to.have.length(101);
    const storm = alerts.find((a) => a.kind === 'alert_storm')!;
    // The one left over: the per_call limit of the team's last policy (created_at, id), with its severity.
    const [last] = (await api().get('/api/v1/policies?limit=1').set(...over.auth).expect(200)).body.data as { id: string; name: string; action: string }[];
    expect(storm).to.include({ count: 1, severity: last!.action === 'block' ? 'critical' : 'warning' });
    expect(storm.details).to.deep.include({ occurrences: 1, byKind: { per_call: 1 }, records: 1, agents: 1, sampleAgents: ['agent-0'] });
    expect(storm.details.samplePolicies).to.deep.equal([{ id: last!.id, name: last!.name }]);
    expect(alerts.filter((a) => a !== storm).some((a) => a.policyId === last!.id)).to.equal(false);
    expect(storm.sampleEventIds).to.deep.equal([one[0]!.id]);
  });

  it('an authorization declined by 300 block policies lists every check, and raises 100 alerts and the storm alert counting the other 200', async () => {
    const team = await newTeam('storm');
    const inputs = Array.from({ length: 300 }, (_, i): PolicyInput => ({ name: `block ${i}`, agents: [], limits: [{ kind: 'per_call', amount: '4.5' }, { kind: 'daily', amount: '500' }], action: 'block', active: true, timezone: null }));
    await testEnv().deps.db.transaction((sql) => createPolicies(sql, team.teamId, inputs, testEnv().deps.policyRevisions));
    const res = await api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: 'agent-0', endpoint: ENDPOINTS[0], amount: '5' }).expect(200);
    expect(res.body.decision).to.equal('declined');
    expect(res.body.checks).to.have.length(600);
    expect(res.body.checks.filter((c: { breaks: boolean }) => c.breaks)).to.have.length(300);
    expect(res.body.reasons).to.have.length(300);
    const alerts = await allAlerts(team);
    expect(alerts).to.have.length(101);
    const storm = alerts.find((a) => a.kind === 'alert_storm')!;
    expect(storm).to.include({ type: 'system', severity: 'critical', count: 200 });
    expect(storm.details).to.deep.include({ occurrences: 200, byKind: { per_call: 200 }, records: 0, declinedAuthorizations: 1, agents: 1, sampleAgents: ['agent-0'] });
    expect(storm.sampleEventIds).to.deep.equal([]);
    expect(storm.message).to.include('from 1 declined authorizations');
    const individual = alerts.filter((a) => a !== storm);
    expect(individual.every((a) => a.details.declined === true && a.details.authorizationId === res.body.id)).to.equal(true);
    expect(individual.reduce((n, a) => n + a.count, 0) + storm.count).to.equal(300);
  });
});
