/**
 * get_settlement over MCP, with real settlements: records paid by real token transfers on the
 * shared local chain, checked by the verifier, then asked about by record id and by transaction
 * hash. The answer is what GET /api/v1/settlements shows; none is an empty list with the reason.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { NETWORK } from '../../scripts/x402-stack/chain.js';
import { loadConfig } from '../../src/config.js';
import type { Reconciler } from '../../src/settlements/reconciler.js';
import { keyWith, sendRecords, type Team } from '../helpers/common.js';
import { api, appWith, describeOnEachRegistry, listenOnce, testEnv } from '../helpers/context.js';
import { chainActions, settleUntil, settlementsOf, teamWithToken, testReconciler, type ChainActions, type SettlementEntry } from '../helpers/settlements.js';
import { x402Stack } from '../helpers/x402.js';
import { answer, call, connect, toolError } from './client.js';

const PAYEE = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d').address;

type Lookup = { data: SettlementEntry[]; message: string | null };

describeOnEachRegistry('MCP get_settlement', function () {
  this.timeout(120_000);
  let chain: ChainActions;
  let recon: Reconciler;
  /** The service with the chain configured, as one running the verifier is. */
  let configured: { url: string; close: () => Promise<void> };
  /** The service without a chain (the test environment's own). */
  let bare: { url: string; close: () => Promise<void> };
  const clients: Client[] = [];

  const clientOf = async (url: string, key: string) => {
    const client = await connect(url, key);
    clients.push(client);
    return client;
  };
  const record = (id: string, fields: Record<string, unknown>) => ({ id, agent_id: 'payer-bot', amount: '0.01', created_at: Date.now(), network: NETWORK, asset: chain.token, ...fields });
  /** A payer's real transfer of 0.01 token and the records that claim it; settled. */
  async function paidAndSettled(team: Team, ids: { true: string; wrong: string }): Promise<{ paid: Hex; entries: SettlementEntry[] }> {
    const payer = await chain.wallet();
    const paid = await chain.transfer(payer, PAYEE, 10_000n);
    const base = { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE };
    await sendRecords(team, [record(ids.true, base), record(ids.wrong, { ...base, amount: '0.02' })]);
    const entries = await settleUntil(team, recon, (e) => e.length === 2 && e.every((x) => x.status !== 'pending'));
    return { paid, entries };
  }

  before(async function () {
    this.timeout(180_000);
    chain = chainActions(await x402Stack());
    recon = testReconciler(chain.url);
    const { chains } = loadConfig({ DATA_DIR: testEnv().dataDir, CHAIN_RPC_URLS: JSON.stringify({ [NETWORK]: chain.url }) });
    const server = http.createServer(appWith([], { config: { ...testEnv().config, chains } }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    configured = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
    };
    bare = await listenOnce();
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await recon?.close();
    await configured?.close();
    await bare?.close();
  });

  it('is listed as a read-only tool taking record_id or tx_hash', async () => {
    const team = await teamWithToken('mcp-settle-list', chain.token);
    const { tools } = await (await clientOf(configured.url, team.apiKey)).listTools();
    const tool = tools.find((t) => t.name === 'get_settlement')!;
    expect(tool.annotations).to.include({ readOnlyHint: true });
    expect(tool.description).to.match(/read scope/);
    const schema = tool.inputSchema as Record<string, any>;
    expect(Object.keys(schema.properties)).to.deep.equal(['record_id', 'tx_hash']);
    expect(schema).to.not.have.property('required');
    expect(schema.additionalProperties).to.equal(false);
    expect(JSON.stringify(schema)).to.not.match(/x-message|\$id/);
  });

  it('by record_id, the record\'s settlement; by tx_hash in any case, every settlement of the transaction: as GET /api/v1/settlements shows them', async () => {
    const team = await teamWithToken('mcp-settle', chain.token);
    const { paid, entries } = await paidAndSettled(team, { true: 'pay-1', wrong: 'pay-2' });
    const c = await clientOf(configured.url, team.apiKey);
    const byRecord = (id: string) => entries.find((e) => e.record_id === id)!;

    const one = answer<Lookup>(await call(c, 'get_settlement', { record_id: 'pay-1' }));
    expect(one).to.deep.equal({ data: [byRecord('pay-1')], message: null });
    expect(one.data[0]).to.include({ status: 'verified', tx_hash: paid.toLowerCase() });
    const wrong = answer<Lookup>(await call(c, 'get_settlement', { record_id: 'pay-2' }));
    expect(wrong.data[0]).to.deep.include({ status: 'mismatch', differences: [{ field: 'amount', reported: '0.02', observed: '0.01' }] });
    const viaHttp = (await api().post('/api/v1/records/settlements').set(...team.auth).send({ ids: ['pay-2'] }).expect(200)).body.data;
    expect(wrong.data).to.deep.equal(viaHttp);

    const shouted = `0x${paid.slice(2).toUpperCase()}`;
    const ofTx = answer<Lookup>(await call(c, 'get_settlement', { tx_hash: shouted }));
    expect(ofTx.message).to.equal(null);
    expect(ofTx.data).to.deep.equal([byRecord('pay-1'), byRecord('pay-2')]);
  });

  it('none: an empty list saying whether the record does not exist, carries no hash, or is not taken in yet; then its settlement', async () => {
    const team = await teamWithToken('mcp-settle-none', chain.token);
    const payer = await chain.wallet();
    const paid = await chain.transfer(payer, PAYEE, 10_000n);
    await sendRecords(team, [record('no-hash', { network: undefined, asset: 'USDC' }), record('fresh', { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE })]);
    const c = await clientOf(configured.url, team.apiKey);
    const none = async (args: Record<string, unknown>, client = c) => {
      const result = answer<Lookup>(await call(client, 'get_settlement', args));
      expect(result.data, JSON.stringify(args)).to.deep.equal([]);
      return result.message!;
    };
    expect(await none({ record_id: 'ghost' })).to.equal('This team has no record "ghost".');
    expect(await none({ record_id: 'no-hash' })).to.equal('Record "no-hash" carries no transaction hash: there is nothing to check on chain.');
    expect(await none({ record_id: 'fresh' })).to.equal(
      `Record "fresh" carries transaction hash ${paid} and is not taken in yet: records are taken in within a poll (SETTLEMENT_POLL_MS) of reaching the event store. Ask again shortly.`,
    );
    expect(await none({ tx_hash: paid })).to.match(/^No settlement of this team has transaction hash 0x[0-9a-f]{64}: no record of the team names it, or the records that do are not taken in yet/);
    // A service that checks no chain says so.
    const unconfigured = await clientOf(bare.url, team.apiKey);
    expect(await none({ record_id: 'fresh' }, unconfigured)).to.match(/but no chain is configured \(CHAIN_RPC_URLS\): records are not checked\.$/);
    expect(await none({ tx_hash: paid }, unconfigured)).to.match(/no chain is configured \(CHAIN_RPC_URLS\)/);

    const [settled] = await settleUntil(team, recon, (e) => e.length === 1 && e[0]!.status === 'verified');
    expect(answer<Lookup>(await call(c, 'get_settlement', { record_id: 'fresh' }))).to.deep.equal({ data: [settled], message: null });
  });

  it('team-scoped: another team\'s key finds none of this team\'s settlements, by record id or transaction hash', async () => {
    const team = await teamWithToken('mcp-settle-mine', chain.token);
    const other = await teamWithToken('mcp-settle-other', chain.token);
    const { paid } = await paidAndSettled(team, { true: 'same-id', wrong: 'only-mine' });
    // The other team has a record of the same id, without a hash.
    await sendRecords(other, [record('same-id', { network: undefined, asset: 'USDC' })]);
    const theirs = await clientOf(configured.url, other.apiKey);
    const sameId = answer<Lookup>(await call(theirs, 'get_settlement', { record_id: 'same-id' }));
    expect(sameId.data).to.deep.equal([]);
    expect(sameId.message).to.match(/^Record "same-id" carries no transaction hash/);
    expect(answer<Lookup>(await call(theirs, 'get_settlement', { record_id: 'only-mine' }))).to.deep.equal({ data: [], message: 'This team has no record "only-mine".' });
    expect(answer<Lookup>(await call(theirs, 'get_settlement', { tx_hash: paid })).data).to.deep.equal([]);
    expect(await settlementsOf(other)).to.deep.equal([]);
    // The owner still sees both.
    const mine = answer<Lookup>(await call(await clientOf(configured.url, team.apiKey), 'get_settlement', { tx_hash: paid }));
    expect(mine.data.map((e) => e.record_id)).to.deep.equal(['only-mine', 'same-id']);
  });

  it('refuses anything but one of record_id and tx_hash, naming the argument; a key without read is refused naming the scope', async () => {
    const team = await teamWithToken('mcp-settle-bad', chain.token);
    const c = await clientOf(configured.url, team.apiKey);
    for (const [args, field, message] of [
      [{}, 'record_id', 'or tx_hash is required: give one of them'],
      [{ record_id: 'a', tx_hash: '0xab' }, 'tx_hash', 'cannot be given with record_id: give one of them'],
      [{ record_id: '' }, 'record_id', 'must be a non-empty string'],
      [{ tx_hash: { hash: '0xab' } }, 'tx_hash', 'must be a non-empty string'],
      [{ record_id: 'x'.repeat(129) }, 'record_id', 'is too long: at most 128 characters'],
      [{ tx_hash: 'x'.repeat(257) }, 'tx_hash', 'is too long: at most 256 characters'],
      [{ record_id: 'a', agent_id: 'bot' }, 'agent_id', 'is not a known field'],
    ] as const) {
      const error = toolError(await call(c, 'get_settlement', args));
      expect(error.code, JSON.stringify(args)).to.equal('validation_failed');
      expect(error.details, JSON.stringify(args)).to.deep.include({ field, message });
      expect(error.message, JSON.stringify(args)).to.include(`Arguments are invalid: ${field}`);
    }
    const ingestOnly = await clientOf(configured.url, (await keyWith(team, { scopes: ['ingest'] })).apiKey);
    const refused = toolError(await call(ingestOnly, 'get_settlement', { record_id: 'a' }));
    expect(refused.code).to.equal('forbidden');
    expect(refused.details).to.deep.equal([{ field: 'scope', message: '"read" is required' }]);
  });
});
