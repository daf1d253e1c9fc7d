/**
 * The settlement verifier on a cluster: three spawned instances on one PostgreSQL, pointed at the
 * shared local chain (test/helpers/x402.ts). Records of real transfers sent to different instances
 * are each verified once, by the one instance holding the network's lease (the only one that
 * talks to the node), with one alert for the one wrong record; once that instance is killed, a
 * survivor takes the lease over and verifies what comes next.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { NETWORK } from '../../scripts/x402-stack/chain.js';
import { call, startCluster, type Cluster } from '../helpers/cluster.js';
import { sdkId, sleep } from '../helpers/common.js';
import type { RunningService } from '../helpers/processes.js';
import { chainActions, type ChainActions } from '../helpers/settlements.js';
import { x402Stack } from '../helpers/x402.js';

type Entry = { record_id: string | null; status: string; differences: { field: string; reported: string; observed: string }[]; tx_hash: string; note: string | null };

const PAYEE = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d').address;
const OPERATOR_KEY = crypto.randomBytes(32).toString('hex');
const LEASE_LOG = `settlements: this instance verifies ${NETWORK}`;

/** The JSON-RPC calls an instance sent to the chain's node, from its /metrics (0 when it sent none). */
async function rpcCalls(instance: RunningService): Promise<number> {
  const text = await (await fetch(`${instance.baseUrl}/metrics`)).text();
  const prefix = `spendscope_chain_rpc_calls_total{network="${NETWORK}"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(prefix.length));
}

describe('settlements: three instances on PostgreSQL verify each record once (spawned)', function () {
  this.timeout(240_000);
  let chain: ChainActions;
  let cluster: Cluster | undefined;

  before(async function () {
    this.timeout(180_000);
    chain = chainActions(await x402Stack());
    cluster = await startCluster('settle', 3, {
      CHAIN_RPC_URLS: JSON.stringify({ [NETWORK]: chain.url }),
      SETTLEMENT_POLL_MS: '200',
      SETTLEMENT_GRACE_S: '2',
      OPERATOR_API_KEY: OPERATOR_KEY,
    });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') {
      for (const [i, s] of (cluster?.instances ?? []).entries()) {
        process.stderr.write(`--- instance ${i} (exit ${String(s.child.exitCode)}), last output:\n${(s.stdout() + s.stderr()).slice(-3000)}\n`);
      }
    }
  });

  after(async () => {
    await cluster?.stop();
  });

  it('each record is verified once, by the one instance that holds the network; killed, a survivor takes over', async () => {
    const c = cluster!;
    const created = await call(c.instances[0]!, OPERATOR_KEY, 'POST', '/api/v1/operator/teams', { name: 'settle-cluster' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const key = created.body.key.apiKey as string;
    // The local token's decimals for the team (so the amounts sent are compared in its units).
    const rate = await call(c.instances[1]!, key, 'PUT', `/api/v1/rates/${chain.token}`, { value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 3_600_000).toISOString() });
    expect(rate.status, JSON.stringify(rate.body)).to.equal(200);

    const payer = await chain.wallet();
    const record = (id: string, txHash: string, amount: string) => ({
      id,
      agent_id: 'payer-bot',
      endpoint: 'https://api.example.com/v1/x',
      method: 'POST',
      amount,
      asset: chain.token,
      network: NETWORK,
      created_at: Date.now(),
      tx_hash: txHash,
      payer_address: payer.address,
      payee_address: PAYEE,
    });
    const send = async (instance: RunningService, records: object[]) => {
      const res = await call(instance, key, 'POST', '/api/v1/events', { events: records });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    };
    const settlements = async (instance: RunningService) => {
      const res = await call(instance, key, 'GET', '/api/v1/settlements?limit=200');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.data as Entry[];
    };
    /** Polls the instances in turn until `done` holds of the team's settlements. */
    const until = async (instances: RunningService[], done: (entries: Entry[]) => boolean, what: string) => {
      const deadline = Date.now() + 90_000;
      for (let i = 0; ; i++) {
        const entries = await settlements(instances[i % instances.length]!);
        if (done(entries)) return entries;
        if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(entries, null, 1)}`);
        await sleep(300);
      }
    };

    // Real transfers, their records sent through the three instances; one reports a wrong amount.
    const paid = [];
    for (const units of [10_000n, 20_000n, 30_000n, 40_000n]) paid.push(await chain.transfer(payer, PAYEE, units));
    const ids = Array.from({ length: 4 }, () => sdkId());
    await send(c.instances[0]!, [record(ids[0]!, paid[0]!, '0.01')]);
    await send(c.instances[1]!, [record(ids[1]!, paid[1]!, '0.02')]);
    await send(c.instances[2]!, [record(ids[2]!, paid[2]!, '0.03'), record(ids[3]!, paid[3]!, '0.05')]);

    const entries = await until(c.instances, (e) => e.length === 4 && e.every((x) => x.status !== 'pending'), 'the records were not all checked');
    // One settlement per record, whichever instance took it.
    expect(entries.map((e) => e.record_id).sort()).to.deep.equal([...ids].sort());
    const of = (id: string) => entries.find((e) => e.record_id === id)!;
    for (const id of ids.slice(0, 3)) expect(of(id), id).to.deep.include({ status: 'verified', differences: [] });
    expect(of(ids[3]!)).to.deep.include({ status: 'mismatch', differences: [{ field: 'amount', reported: '0.05', observed: '0.04' }] });
    expect(of(ids[3]!).tx_hash).to.equal(paid[3]!.toLowerCase());
    // The same on every instance.
    for (const instance of c.instances) {
      expect((await settlements(instance)).map((e) => `${e.record_id}:${e.status}`).sort()).to.deep.equal(entries.map((e) => `${e.record_id}:${e.status}`).sort());
    }

    // A few more polls of every instance: nothing is judged (or alerted) twice.
    await sleep(1_000);
    const alerts = await call(c.instances[2]!, key, 'GET', '/api/v1/alerts?type=settlement&limit=200');
    expect(alerts.status, JSON.stringify(alerts.body)).to.equal(200);
    expect(alerts.body.data.map((a: { kind: string; count: number }) => `${a.kind}:${a.count}`)).to.deep.equal(['mismatch:1']);

    // Only the lease's holder talked to the node; the two others sent it nothing.
    const counted = await Promise.all(c.instances.map(rpcCalls));
    const holders = c.instances.filter((_, i) => counted[i]! > 0);
    expect(holders, `calls per instance: ${counted.join(', ')}`).to.have.length(1);
    const holder = holders[0]!;
    expect(c.instances.flatMap((s, i) => (s.stdout().includes(LEASE_LOG) ? [i] : [])), 'instances that took the lease').to.deep.equal([c.instances.indexOf(holder)]);

    // Killed: its session ends, and with it the lease; a survivor takes it at its next cycle.
    const survivors = c.instances.filter((s) => s !== holder);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const later = await chain.transfer(payer, PAYEE, 50_000n);
    const lastId = sdkId();
    await send(survivors[1]!, [record(lastId, later, '0.05')]);
    const after = await until(survivors, (e) => e.find((x) => x.record_id === lastId)?.status === 'verified', 'the record sent after the kill was not verified');
    expect(after).to.have.length(5);
    expect(after.find((x) => x.record_id === lastId)!.differences).to.deep.equal([]);

    const taken = await Promise.all(survivors.map(rpcCalls));
    expect(taken.filter((n) => n > 0), `calls per survivor: ${taken.join(', ')}`).to.have.length(1);
    expect(survivors.filter((s) => s.stdout().includes(LEASE_LOG))).to.have.length(1);
    expect(survivors[taken.findIndex((n) => n > 0)]!.stdout()).to.include(LEASE_LOG);
    // Still the one alert: the survivor did not judge the earlier records again.
    const still = await call(survivors[0]!, key, 'GET', '/api/v1/alerts?type=settlement&limit=200');
    expect(still.body.data.map((a: { kind: string; count: number }) => `${a.kind}:${a.count}`)).to.deep.equal(['mismatch:1']);
  });
});
