/**
 * Faults of a deployment of several instances on PostgreSQL (spawned, as in cluster.test.ts): an
 * instance killed with SIGKILL under load while clients retry on the others, PostgreSQL
 * restarting under the instances, and ClickHouse down while ingest goes on.
 */
import { expect } from 'chai';
import { call, startCluster, type Cluster } from '../helpers/cluster.js';
import { sdkId, sleep } from '../helpers/common.js';
import { restartTestPostgres } from '../helpers/postgres.js';
import type { RunningService } from '../helpers/processes.js';

const record = (agent: string, amount: string) => ({
  id: sdkId(),
  agent_id: agent,
  endpoint: 'https://api.example.com/v1/search',
  method: 'GET',
  amount,
  asset: 'USDC',
  timestamp: new Date(Date.now() - 1_000).toISOString(),
});

/** Micro-units of a decimal string with at most 6 places. */
const micros = (amount: string) => {
  const [whole, fraction = ''] = amount.split('.');
  return BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
};

describe('several instances on PostgreSQL: faults (spawned)', function () {
  this.timeout(240_000);
  let cluster: Cluster | undefined;
  afterEach(async function () {
    // A failed test shows what the instances said last (one that exited shows why).
    if (this.currentTest?.state === 'failed') {
      for (const [i, s] of (cluster?.instances ?? []).entries()) {
        process.stderr.write(`--- instance ${i} (exit ${String(s.child.exitCode)}), last output:\n${(s.stdout() + s.stderr()).slice(-3000)}\n`);
      }
      if (cluster) process.stderr.write(`--- the ClickHouse server's errors:\n${cluster.clickhouse.errors().slice(-3000)}\n`);
    }
    await cluster?.stop();
    cluster = undefined;
  });

  it('kill -9 of the loading instance under load, clients retrying on the others: every acknowledged record stored once, no hold lost, one alert', async () => {
    cluster = await startCluster('killed', 3);
    const c = cluster;
    const alive = new Set<RunningService>(c.instances);
    const pick = (n: number) => [...alive][n % alive.size]!;
    // A breach that will happen during the load, once; and a hold made before the kill.
    expect((await call(c.instances[1]!, c.key, 'POST', '/api/v1/policies', { name: 'one a day', agents: ['storm'], limits: [{ kind: 'daily', amount: '1' }], action: 'flag' })).status).to.equal(201);
    expect((await call(c.instances[1]!, c.key, 'POST', '/api/v1/policies', { name: 'held', agents: ['payer'], limits: [{ kind: 'daily', amount: '10' }], action: 'block' })).status).to.equal(201);
    const hold = await call(c.instances[0]!, c.key, 'POST', '/api/v1/authorizations', { agent_id: 'payer', endpoint: 'https://api.example.com/v1/x', amount: '4', asset: 'USDC' });
    expect(hold.body.decision).to.equal('approved');

    const acknowledged = new Map<string, string>();
    let stop = false;
    let errors = 0;
    const answered = new Map<RunningService, number>();
    // Six clients sending batches of 25 as the SDK does: a batch not answered 200 (connection
    // refused or reset, a 503) is sent again, as it was, to another instance.
    const client = async (n: number) => {
      for (let b = 0; !stop; b++) {
        const batch = Array.from({ length: 25 }, (_, i) => record(i % 5 === 0 ? 'storm' : `agent-${n}`, `0.0${(b + i) % 9}1`));
        for (let attempt = 0; ; attempt++) {
          try {
            const to = pick(n + attempt);
            const res = await call(to, c.key, 'POST', '/api/v1/audit/batch', { records: batch });
            if (res.status === 200) {
              answered.set(to, (answered.get(to) ?? 0) + 1);
              break;
            }
            if (res.status !== 503) throw new Error(`answered ${res.status}: ${JSON.stringify(res.body)}`);
          } catch (err) {
            if ((err as Error).message.startsWith('answered')) throw err;
            errors++;
          }
          await sleep(50);
        }
        for (const r of batch) acknowledged.set(r.id, r.amount);
      }
    };
    const clients = Array.from({ length: 6 }, (_, n) => client(n));
    await sleep(2_000);
    // The instance that loads (the first started takes the loader's lock): its death hands the loader over.
    const victim = c.instances.find((i) => i.stdout().includes('this instance loads the shared ingest log'))!;
    expect(victim, 'the loading instance').to.not.equal(undefined);
    alive.delete(victim);
    victim.child.kill('SIGKILL');
    await victim.exited;
    await sleep(3_000);
    stop = true;
    await Promise.all(clients);
    // The killed instance was taking its share of the load until the kill (requests in flight to it
    // then, if any, failed and were sent again elsewhere: `errors`).
    expect(answered.get(victim) ?? 0, `batches the killed instance answered (${errors} requests cut by the kill)`).to.be.above(10);

    // Reads on a survivor wait for every acknowledged record (the loader taken over meanwhile).
    const survivor = [...alive][0]!;
    const summary = await call(survivor, c.key, 'GET', `/api/v1/analytics/summary?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}`);
    expect(summary.status, JSON.stringify(summary.body)).to.equal(200);
    expect(summary.body.count, 'records in ClickHouse').to.equal(acknowledged.size);
    const sent = [...acknowledged.values()].reduce((sum, a) => sum + micros(a), 0n);
    expect(micros(summary.body.totalSpend)).to.equal(sent);
    // The hold made through the killed instance is still held, and captured once through another.
    const found = await call(survivor, c.key, 'GET', `/api/v1/authorizations/${hold.body.id}`);
    expect(found.body.status ?? found.body.state, JSON.stringify(found.body)).to.equal('held');
    const alerts = await call(survivor, c.key, 'GET', '/api/v1/alerts?agent=storm');
    expect(alerts.body.data.filter((a: { kind: string }) => a.kind === 'daily'), JSON.stringify(alerts.body)).to.have.length(1);
  });

  it('PostgreSQL restarting: requests answer 503 with Retry-After (never 500) while it is down, and the instances recover by themselves', async function () {
    cluster = await startCluster('restart', 2);
    const c = cluster;
    const before = await call(c.instances[0]!, c.key, 'POST', '/api/v1/audit/batch', { records: [record('steady', '1')] });
    expect(before.status).to.equal(200);
    const down: { status: number; retryAfter: string | null; path: string }[] = [];
    const restarted = await restartTestPostgres(async () => {
      for (const [n, method, path, body] of [
        [0, 'POST', '/api/v1/audit/batch', { records: [record('steady', '1')] }],
        [1, 'GET', '/api/v1/team', undefined],
        [0, 'POST', '/api/v1/authorizations', { agent_id: 'steady', endpoint: 'https://api.example.com/v1/x', amount: '1', asset: 'USDC' }],
        [1, 'GET', '/healthz', undefined],
      ] as const) {
        const res = await call(c.instances[n]!, c.key, method, path, body);
        down.push({ status: res.status, retryAfter: path === '/healthz' ? 'n/a' : res.headers.get('retry-after'), path });
      }
    });
    if (!restarted) this.skip();
    for (const d of down) expect(d.status, d.path).to.equal(503);
    for (const d of down) expect(d.retryAfter, d.path).to.not.equal(null);
    // Back: within seconds, both instances answer again, without a restart of theirs.
    const deadline = Date.now() + 30_000;
    for (const instance of c.instances) {
      let status = 0;
      while ((status = (await call(instance, c.key, 'POST', '/api/v1/audit/batch', { records: [record('steady', '1')] })).status) !== 200 && Date.now() < deadline) await sleep(200);
      expect(status).to.equal(200);
    }
    const summary = await call(c.instances[1]!, c.key, 'GET', `/api/v1/analytics/summary?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}&agent=steady`);
    expect(summary.status, JSON.stringify(summary.body)).to.equal(200);
    expect(summary.body.count).to.equal(3);
  });

  it('ClickHouse down: ingest keeps acknowledging into PostgreSQL up to the backlog bound, instances stay ready until it, reads answer 503; then it drains by itself', async () => {
    cluster = await startCluster('clickhouse-down', 2, { INGEST_BACKLOG_MAX_ROWS: '200', READ_WAIT_MS: '500' });
    const c = cluster;
    const summaryPath = () => `/api/v1/analytics/summary?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}&agent=patient`;
    expect((await call(c.instances[0]!, c.key, 'POST', '/api/v1/audit/batch', { records: [record('patient', '1')] })).status).to.equal(200);
    // READ_WAIT_MS is 500 here: on a slow machine the first load can take longer, and the read then
    // answers 503 with Retry-After, as documented; a client asks again.
    let first = await call(c.instances[1]!, c.key, 'GET', summaryPath());
    for (let tries = 0; first.status === 503 && tries < 40; tries++) {
      expect(first.headers.get('retry-after')).to.not.equal(null);
      await sleep(250);
      first = await call(c.instances[1]!, c.key, 'GET', summaryPath());
    }
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body.count).to.equal(1);

    await c.clickhouse.stop();
    // Batches of 25 through either instance, acknowledged while the shared backlog is under 200. Each
    // instance reads that backlog every 500 ms (a coarse bound): batches are paced past it.
    const acknowledged: string[] = ['1'];
    let refused: { status: number; body: any; retryAfter: string | null } | undefined;
    for (let b = 0; b < 20 && !refused; b++) {
      const batch = Array.from({ length: 25 }, (_, i) => record('patient', `0.${(b * 25 + i) % 10}1`));
      const res = await call(c.instances[b % 2]!, c.key, 'POST', '/api/v1/audit/batch', { records: batch });
      if (res.status === 200) acknowledged.push(...batch.map((r) => r.amount));
      else refused = { status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') };
      await sleep(600);
      if (b === 1) {
        // Under the bound, both instances stay in rotation, saying ClickHouse does not answer.
        for (const instance of c.instances) {
          const health = await call(instance, c.key, 'GET', '/healthz');
          expect(health.status, JSON.stringify(health.body)).to.equal(200);
          expect(health.body.stores.clickhouse).to.match(/^failed: /);
          expect(health.body.ingest.backlogRows).to.be.at.least(50);
        }
      }
    }
    // The bound counts the shared backlog (records through both instances), not one instance's.
    expect(acknowledged.length - 1, 'records acknowledged with ClickHouse down').to.be.within(200, 224);
    expect(refused?.status, JSON.stringify(refused?.body)).to.equal(503);
    expect(refused!.retryAfter).to.not.equal(null);
    for (const instance of c.instances) {
      const health = await call(instance, c.key, 'GET', '/healthz');
      expect(health.status).to.equal(503);
      expect(health.body.stores.clickhouse).to.match(/^failed: /);
      expect(health.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal(['ingest.backlogRows']);
    }
    const read = await call(c.instances[1]!, c.key, 'GET', summaryPath());
    expect(read.status, JSON.stringify(read.body)).to.equal(503);
    expect(read.headers.get('retry-after')).to.not.equal(null);

    // Back: the loader drains the backlog by itself and every acknowledged record is counted once.
    await c.clickhouse.resume();
    const deadline = Date.now() + 60_000;
    let summary = await call(c.instances[0]!, c.key, 'GET', summaryPath());
    while (summary.status !== 200 && Date.now() < deadline) {
      await sleep(500);
      summary = await call(c.instances[0]!, c.key, 'GET', summaryPath());
    }
    expect(summary.status, JSON.stringify(summary.body)).to.equal(200);
    expect(summary.body.count).to.equal(acknowledged.length);
    expect(micros(summary.body.totalSpend)).to.equal(acknowledged.reduce((sum, a) => sum + micros(a), 0n));
    // Ready again once the instance's view of the backlog (read every 500 ms) has it drained. Ready
    // comes back as soon as the backlog is under the bound, and the loader moves its position after
    // ClickHouse has the block: wait for the view to reach 0, not only for ready.
    let health = await call(c.instances[1]!, c.key, 'GET', '/healthz');
    while ((health.status !== 200 || health.body.ingest?.backlogRows !== 0) && Date.now() < deadline) {
      await sleep(200);
      health = await call(c.instances[1]!, c.key, 'GET', '/healthz');
    }
    expect(health.status, JSON.stringify(health.body)).to.equal(200);
    expect(health.body.stores.clickhouse).to.equal('ok');
    expect(health.body.ingest.backlogRows).to.equal(0);
  });
});
