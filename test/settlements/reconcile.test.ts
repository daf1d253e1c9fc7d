/**
 * Records checked against a real local chain (scripts/x402-stack) with real token transfers: true,
 * wrong and invented records, a reverted transaction, a payment nobody reported, a reorganisation,
 * a node that goes down, and a restart.
 */
import { expect } from 'chai';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { NETWORK } from '../../scripts/x402-stack/chain.js';
import type { Reconciler } from '../../src/settlements/reconciler.js';
import { alertsOf, newPolicy, sendRecords, sleep, type Team } from '../helpers/common.js';
import { api, describeOnEachRegistry, testEnv } from '../helpers/context.js';
import { chainActions, settleUntil, switchableNode, teamWithToken as teamWith, testReconciler, type ChainActions, type SettlementEntry } from '../helpers/settlements.js';
import { x402Stack } from '../helpers/x402.js';

type Entry = { id: string; record_id: string | null; status: string; differences: { field: string; reported: string; observed: string }[]; note: string | null; observed: Record<string, any> | null; reported: Record<string, any> | null; tx_hash: string };

const PAYEE = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d').address;
const ETHEREUM_USDC = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';

describeOnEachRegistry('settlements: records checked against the chain', function () {
  this.timeout(120_000);
  let chain: ChainActions;
  let recon: Reconciler;

  before(async function () {
    this.timeout(180_000);
    chain = chainActions(await x402Stack());
    recon = testReconciler(chain.url);
  });

  after(async () => {
    await recon.close();
  });

  const teamWithToken = (label: string) => teamWith(label, chain.token);

  const record = (id: string, fields: Record<string, unknown>) => ({ id, agent_id: 'payer-bot', amount: '0.01', created_at: Date.now(), network: NETWORK, asset: chain.token, ...fields });

  const settlements = async (team: Team, query = '') => (await api().get(`/api/v1/settlements?limit=200${query}`).set(...team.auth).expect(200)).body.data as Entry[];

  /** Cycles until `done` holds of the team's settlements (settleUntil, with this file's entry type). */
  const until = (team: Team, done: (entries: Entry[]) => boolean, cycles = 40, r = recon) => settleUntil(team, r, done as (e: SettlementEntry[]) => boolean, cycles) as Promise<Entry[]>;

  const byRecord = (entries: Entry[], id: string) => entries.find((e) => e.record_id === id)!;

  it('a true record is verified; a wrong amount, payee and token are mismatches naming the field; a reverted transaction failed', async () => {
    const team = await teamWithToken('settle-true');
    const payer = await chain.wallet();
    const paid = await chain.transfer(payer, PAYEE, 10_000n);
    const reverted = await chain.revertingTransfer(payer, PAYEE);
    const base = { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE };
    await sendRecords(team, [
      record('true', base),
      record('amount', { ...base, amount: '0.02' }),
      record('payee', { ...base, payee_address: '0x000000000000000000000000000000000000dead' }),
      record('token', { ...base, asset: ETHEREUM_USDC }),
      record('reverted', { ...base, tx_hash: reverted }),
    ]);
    const entries = await until(team, (e) => e.length === 5 && e.every((x) => x.status !== 'pending'));
    expect(byRecord(entries, 'true')).to.deep.include({ status: 'verified', differences: [] });
    expect(byRecord(entries, 'true').observed).to.deep.include({ amount: '0.01', amount_raw: '10000', payer: payer.address.toLowerCase(), payee: PAYEE.toLowerCase(), token: chain.token.toLowerCase(), receipt: 'success' });
    expect(byRecord(entries, 'amount')).to.deep.include({ status: 'mismatch', differences: [{ field: 'amount', reported: '0.02', observed: '0.01' }] });
    expect(byRecord(entries, 'payee')).to.deep.include({ status: 'mismatch', differences: [{ field: 'payee', reported: '0x000000000000000000000000000000000000dead', observed: PAYEE.toLowerCase() }] });
    expect(byRecord(entries, 'token')).to.deep.include({ status: 'mismatch', differences: [{ field: 'asset', reported: ETHEREUM_USDC, observed: chain.token.toLowerCase() }] });
    expect(byRecord(entries, 'reverted')).to.deep.include({ status: 'failed' });
    expect(byRecord(entries, 'reverted').observed).to.deep.include({ receipt: 'reverted' });

    const alerts = await alertsOf(team, '&type=settlement');
    const kinds = alerts.map((a) => `${a.kind}:${a.count}`).sort();
    // One alert per agent, kind and day, counting its records.
    expect(kinds).to.deep.equal(['failed:1', 'mismatch:3']);
    expect(alerts.find((a) => a.kind === 'mismatch')).to.include({ severity: 'critical', subject: paid.toLowerCase() });

    const filtered = await settlements(team, '&status=mismatch');
    expect(filtered.map((e) => e.record_id).sort()).to.deep.equal(['amount', 'payee', 'token']);
    const values = (await api().post('/api/v1/records/settlements').set(...team.auth).send({ ids: ['true', 'nope'] }).expect(200)).body.data as Entry[];
    expect(values.map((e) => [e.record_id, e.status])).to.deep.equal([['true', 'verified']]);

    const summary = (await api().get('/api/v1/settlements/summary').set(...team.auth).expect(200)).body;
    const token = chain.token.toLowerCase();
    expect(summary.statuses.map((s: { status: string; count: number }) => [s.status, s.count])).to.deep.equal([['verified', 1], ['mismatch', 3], ['failed', 1]]);
    const mismatch = summary.statuses.find((s: { status: string }) => s.status === 'mismatch');
    // Per token, never added across: 0.01 + 0.02 + 0.01 reported in the local token, 0.01 in Ethereum's USDC; the chain moved 0.01 three times.
    expect(mismatch.assets).to.deep.equal([
      { asset: token, reported: '0.03', observed: '0.03' },
      { asset: ETHEREUM_USDC, reported: '0.01', observed: '0' },
    ].sort((a, b) => (a.asset < b.asset ? -1 : 1)));
    expect(mismatch).to.include({ value: '0.04', unvalued: 0 });

    // Another cycle finds nothing new: no alert counted twice.
    await recon.cycle();
    expect((await alertsOf(team, '&type=settlement')).map((a) => `${a.kind}:${a.count}`).sort()).to.deep.equal(['failed:1', 'mismatch:3']);
  });

  it('an invented hash is pending within the grace period, then not_found with its alert; unknown networks and tokens are unverifiable', async () => {
    const team = await teamWithToken('settle-invented');
    const invented = `0x${'ab'.repeat(32)}` as Hex;
    await sendRecords(team, [
      record('invented', { tx_hash: invented }),
      record('elsewhere', { tx_hash: invented, network: 'eip155:999999' }),
      record('odd-token', { tx_hash: invented, asset: 'DOGE' }),
    ]);
    const entries = await until(team, (e) => e.length === 3 && byRecord(e, 'invented').status === 'not_found');
    expect(byRecord(entries, 'invented').note).to.match(/no such transaction after 2 s/);
    expect(byRecord(entries, 'elsewhere')).to.deep.include({ status: 'unverifiable', note: 'no RPC is configured for eip155:999999 (CHAIN_RPC_URLS)' });
    expect(byRecord(entries, 'odd-token').status).to.equal('unverifiable');
    expect(byRecord(entries, 'odd-token').note).to.match(/no token contract is known for asset "DOGE"/);
    const [alert] = await alertsOf(team, '&type=settlement');
    expect(alert).to.include({ kind: 'not_found', severity: 'warning', agentId: 'payer-bot' });
  });

  it('a transfer from a registered wallet that no record claims is unreported, alerted and suspends the agent under on_unreported: "suspend"; a claimed one is not', async () => {
    const team = await teamWithToken('settle-unreported');
    const wallet = await chain.wallet();
    await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'walleted', name: 'Walleted' }).expect(201);
    const patched = await api().patch('/api/v1/agents/walleted').set(...team.auth).send({ wallets: [{ network: NETWORK, address: wallet.address }] }).expect(200);
    expect(patched.body.wallets).to.deep.equal([{ network: NETWORK, address: wallet.address.toLowerCase() }]);
    await newPolicy(team, { name: 'report every payment', agents: ['walleted'], limits: [], on_unreported: 'suspend' });
    await recon.cycle(); // the wallet is followed from the current block on

    const claimed = await chain.transfer(wallet, PAYEE, 5_000n);
    const unclaimed = await chain.transfer(wallet, PAYEE, 7_000n);
    await sendRecords(team, [record('claims', { agent_id: 'walleted', amount: '0.005', tx_hash: claimed, payer_address: wallet.address, payee_address: PAYEE })]);
    const entries = await until(team, (e) => e.some((x) => x.status === 'unreported'));
    const unreported = entries.filter((e) => e.status === 'unreported');
    expect(unreported).to.have.length(1);
    expect(unreported[0]).to.deep.include({ record_id: null, tx_hash: unclaimed.toLowerCase() });
    expect(unreported[0]!.observed).to.deep.include({ amount_raw: '7000', payee: PAYEE.toLowerCase(), payer: wallet.address.toLowerCase() });
    expect(byRecord(entries, 'claims').status).to.equal('verified');

    const [alert] = await alertsOf(team, '&type=settlement');
    expect(alert).to.include({ kind: 'unreported', severity: 'critical', agentId: 'walleted' });
    expect(alert!.message).to.contain('0.007').and.contain(unclaimed.toLowerCase());
    const summary = (await api().get('/api/v1/settlements/summary').set(...team.auth).expect(200)).body;
    expect(summary.statuses.map((s: { status: string; count: number }) => [s.status, s.count])).to.deep.equal([['verified', 1], ['unreported', 1]]);
    expect(summary.statuses[1].assets).to.deep.equal([{ asset: chain.token.toLowerCase(), reported: '0', observed: '0.007' }]);
    const agent = (await api().get('/api/v1/agents/walleted').set(...team.auth).expect(200)).body;
    expect(agent.status).to.equal('suspended');
  });

  it('a verified transaction taken away by a reorganisation goes back to pending and says so, then not_found', async () => {
    const team = await teamWithToken('settle-reorg');
    const payer = await chain.wallet();
    const snapshot = await chain.rpc<string>('evm_snapshot');
    let reverted = false;
    try {
      const paid = await chain.transfer(payer, PAYEE, 10_000n);
      await sendRecords(team, [record('reorged', { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE })]);
      await until(team, (e) => e[0]?.status === 'verified');
      expect(await chain.rpc('evm_revert', [snapshot])).to.equal(true);
      reverted = true;
      await chain.rpc('evm_mine');
      await recon.cycle();
      const [back] = await settlements(team);
      expect(back).to.deep.include({ status: 'pending' });
      expect(back!.note).to.match(/^its block \d+ \(0x[0-9a-f]{64}\) was reorganised away/);
      const [gone] = await until(team, (e) => e[0]?.status === 'not_found');
      expect(gone!.note).to.contain('was reorganised away');
    } finally {
      if (!reverted) await chain.rpc('evm_revert', [snapshot]);
    }
  });

  it('a node that is down delays checks and raises nothing; they are caught up once it answers', async () => {
    const team = await teamWithToken('settle-down');
    const node = await switchableNode(chain.url);
    const flaky = testReconciler(node.url);
    try {
      const payer = await chain.wallet();
      const paid = await chain.transfer(payer, PAYEE, 10_000n);
      await sendRecords(team, [record('during', { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE }), record('invented-during', { tx_hash: `0x${'cd'.repeat(32)}` })]);
      node.down = true;
      await testEnv().deps.readEvents(team.teamId);
      await sleep(350);
      // Down for longer than the grace period: still nothing concluded.
      for (let i = 0; i < 8; i++) {
        await flaky.cycle();
        await sleep(300);
      }
      expect((await settlements(team)).map((e) => e.status)).to.deep.equal(['pending', 'pending']);
      expect(await alertsOf(team, '&type=settlement')).to.deep.equal([]);
      expect(node.requests).to.be.greaterThan(8);
      node.down = false;
      const entries = await until(team, (e) => e.every((x) => x.status !== 'pending'), 20, flaky);
      expect(byRecord(entries, 'during').status).to.equal('verified');
      expect(byRecord(entries, 'invented-during').status).to.equal('not_found');
    } finally {
      await flaky.close();
      await node.close();
    }
  });

  it('a restart keeps the cursors: a verifier started again takes in and alerts nothing twice', async () => {
    const team = await teamWithToken('settle-restart');
    const wallet = await chain.wallet();
    await api().post('/api/v1/agents').set(...team.auth).send({ external_id: 'restarted', name: 'R' }).expect(201);
    await api().patch('/api/v1/agents/restarted').set(...team.auth).send({ wallets: [{ network: NETWORK, address: wallet.address }] }).expect(200);
    const first = testReconciler(chain.url);
    await first.cycle();
    await chain.transfer(wallet, PAYEE as Address, 1_000n);
    await until(team, (e) => e.some((x) => x.status === 'unreported'), 40, first);
    const cursors = await testEnv().deps.db.all<{ name: string; position: number }>('SELECT name, position FROM settlement_cursors ORDER BY name');
    await first.close();
    const second = testReconciler(chain.url);
    try {
      await second.cycle();
      await second.cycle();
      const after = await testEnv().deps.db.all<{ name: string; position: number }>('SELECT name, position FROM settlement_cursors ORDER BY name');
      for (const c of cursors) expect(Number(after.find((a) => a.name === c.name)!.position)).to.be.at.least(Number(c.position));
      expect((await settlements(team)).filter((e) => e.status === 'unreported')).to.have.length(1);
      expect((await alertsOf(team, '&type=settlement')).map((a) => a.count)).to.deep.equal([1]);
    } finally {
      await second.close();
    }
  });
});
