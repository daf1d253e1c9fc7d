/**
 * What the settlement tests do on the shared local chain (test/helpers/x402.ts): fresh funded
 * wallets, token transfers (and one that reverts), snapshots for reorganisations; and a verifier
 * built on the current test environment, pointed at that chain.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, createWalletClient, http as viemHttp, encodeFunctionData, keccak256, type Address, type Hex } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { loadConfig } from '../../src/config.js';
import type { ChainsConfig } from '../../src/config-types.js';
import { SharedLoadFrontier } from '../../src/ingest/shared-freshness.js';
import { soleLeases, type Leases } from '../../src/settlements/leases.js';
import { Reconciler } from '../../src/settlements/reconciler.js';
import { DEV_KEYS, NETWORK } from '../../scripts/x402-stack/chain.js';
import { sleep, type Team } from './common.js';
import { api, newTeam, testEnv } from './context.js';
import type { X402Stack } from './x402.js';

export interface ChainActions {
  url: string;
  token: Address;
  /** A new wallet with 1 ETH and 1000 tokens. */
  wallet(): Promise<PrivateKeyAccount>;
  /** Sends `units` of the token; resolves to the mined transaction's hash. */
  transfer(from: PrivateKeyAccount, to: Address, units: bigint): Promise<Hex>;
  /** A transfer of more than the wallet holds, mined and reverted; its hash. */
  revertingTransfer(from: PrivateKeyAccount, to: Address): Promise<Hex>;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
}

export function chainActions(stack: X402Stack): ChainActions {
  const url = stack.chain.url;
  const token = stack.chain.token.address;
  const abi = stack.chain.token.abi as never;
  const transport = viemHttp(url);
  const reader = createPublicClient({ chain: hardhat, transport });
  const minter = createWalletClient({ chain: hardhat, transport, account: privateKeyToAccount(DEV_KEYS[0]!) });
  const rpc = <T>(method: string, params: unknown[] = []) => reader.request({ method: method as never, params: params as never }) as Promise<T>;
  return {
    url,
    token,
    rpc,
    async wallet() {
      const account = privateKeyToAccount(`0x${crypto.randomBytes(32).toString('hex')}`);
      await rpc('hardhat_setBalance', [account.address, '0xde0b6b3a7640000']);
      const minted = await minter.writeContract({ address: token, abi, functionName: 'mint', args: [account.address, 1_000n * 10n ** 6n] });
      await reader.waitForTransactionReceipt({ hash: minted });
      return account;
    },
    async transfer(from, to, units) {
      const wallet = createWalletClient({ chain: hardhat, transport, account: from });
      const hash = await wallet.writeContract({ address: token, abi, functionName: 'transfer', args: [to, units] });
      await reader.waitForTransactionReceipt({ hash });
      return hash;
    },
    async revertingTransfer(from, to) {
      // Signed by hand with its gas given: the node mines it, and it reverts (the balance is short).
      const nonce = await reader.getTransactionCount({ address: from.address });
      const data = encodeFunctionData({ abi: stack.chain.token.abi as never, functionName: 'transfer', args: [to, 10n ** 30n] } as never);
      const signed = await from.signTransaction({ chainId: 31337, to: token, data, gas: 100_000n, nonce, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, type: 'eip1559' });
      const hash = keccak256(signed);
      await rpc('eth_sendRawTransaction', [signed]).catch(() => undefined);
      await reader.waitForTransactionReceipt({ hash });
      return hash;
    },
  };
}

/** A node that answers as the chain, or not at all when told it is down (503), counting what reached it. */
export async function switchableNode(target: string): Promise<{ url: string; down: boolean; requests: number; close(): Promise<void> }> {
  const state = { down: false, requests: 0 };
  const server = http.createServer((req, res) => {
    state.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (state.down) {
        res.writeHead(503).end('down');
        return;
      }
      fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
        .then(async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()))
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
}

/** The chain settings the tests check NETWORK at `rpcUrl` with (a 2 s grace unless given). */
export function testChains(rpcUrl: string, graceS = 2): ChainsConfig {
  return loadConfig({ DATA_DIR: testEnv().dataDir, CHAIN_RPC_URLS: JSON.stringify({ [NETWORK]: rpcUrl }), SETTLEMENT_GRACE_S: String(graceS), SETTLEMENT_POLL_MS: '100', CHAIN_RPC_TIMEOUT_MS: '1000' }).chains!;
}

/** A verifier on the current test environment's stores, checking NETWORK at `rpcUrl`; cycles are run by the test. */
export function testReconciler(rpcUrl: string, options: { graceS?: number; leases?: Leases } = {}): Reconciler {
  const env = testEnv();
  const chains = testChains(rpcUrl, options.graceS);
  const { deps } = env;
  // The shared log's positions count once taken a margin ago: a short one here.
  const shared = new SharedLoadFrontier(deps.db, 300);
  const frontier = async (now: number) => (env.dialect === 'postgres' ? shared.through(now) : deps.ingest.freshness.loadFrontier(now));
  return new Reconciler({
    chains,
    assetDecimals: env.config.ingest.assetDecimals,
    db: deps.db,
    events: deps.events,
    rates: deps.rates,
    policyRevisions: deps.policyRevisions,
    leases: options.leases ?? soleLeases,
    logger: deps.logger,
    metrics: deps.metrics,
    loadFrontier: async (now) => frontier(now),
    backoffMs: [20, 20],
    // The test process's own loop is busy with the tests: the verifier never yields here.
    busyAbove: 2,
  });
}

/** A settlement as GET /api/v1/settlements lists it. */
export type SettlementEntry = { id: string; record_id: string | null; status: string; tx_hash: string; [field: string]: unknown };

/** A team whose rates know the local token (1 USD, 6 decimals), so its records of the token can be checked. */
export async function teamWithToken(label: string, token: Address): Promise<Team> {
  const team = await newTeam(label);
  await api().put(`/api/v1/rates/${token}`).set(...team.auth).send({ value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 3_600_000).toISOString() }).expect(200);
  return team;
}

/** The team's settlements, as GET /api/v1/settlements lists them (newest first, up to 200). */
export async function settlementsOf(team: Team): Promise<SettlementEntry[]> {
  return (await api().get('/api/v1/settlements?limit=200').set(...team.auth).expect(200)).body.data as SettlementEntry[];
}

/** Cycles `recon` until `done` holds of the team's settlements (after its records are loaded and past the intake's margin). */
export async function settleUntil(team: Team, recon: Reconciler, done: (entries: SettlementEntry[]) => boolean, cycles = 40): Promise<SettlementEntry[]> {
  for (let i = 0; ; i++) {
    await testEnv().deps.readEvents(team.teamId);
    await sleep(350);
    await recon.cycle();
    const entries = await settlementsOf(team);
    if (done(entries)) return entries;
    if (i >= cycles) throw new Error(`settlements did not settle: ${JSON.stringify(entries)}`);
  }
}
