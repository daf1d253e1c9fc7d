/**
 * The settlement verifier (docs/reconciliation.md): every poll it takes new records with a
 * transaction hash in, checks the due ones against their network, looks again at recent ones
 * for reorganisations, follows agents' wallets, and copies what changed to ClickHouse for BI.
 * It runs beside the service, never on a request's path; a network that is down waits.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { bookDecimals } from '../domain/rates.js';
import { decimalsWith, type DecimalsOf } from '../domain/assets.js';
import { isEvmAddress, TOKEN_CONTRACTS } from '../domain/tokens.js';
import type { ChainsConfig } from '../config-types.js';
import type { Metrics } from '../metrics/metrics.js';
import type { PolicyRevisions } from '../policies/revisions.js';
import type { LoadFrontier } from '../ingest/freshness.js';
import type { RateBooks } from '../rates/books.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database } from '../stores/sql.js';
import { raiseSettlementAlert, suspendForUnreported } from './alerts.js';
import { RECORDS_CURSOR, takeIn } from './intake.js';
import type { Leases } from './leases.js';
import { markMirrored, oldestPending, readCursor, statusCounts, unmirrored, type Settlement } from './repository.js';
import { JsonRpc, RpcUnavailable } from './rpc.js';
import { ROUND, Verifier } from './verifier.js';
import { WalletWatcher } from './watcher.js';

export interface ReconcilerDeps {
  chains: ChainsConfig;
  /** ASSET_DECIMALS. */
  assetDecimals: Record<string, number>;
  db: Database;
  events: EventStore;
  rates: Pick<RateBooks, 'book'>;
  policyRevisions: PolicyRevisions;
  leases: Leases;
  logger: Logger;
  metrics?: Metrics;
  /** How far the loader has surely stored the ingest log (src/ingest/freshness.ts, LoadFrontier). */
  loadFrontier(now: number): Promise<LoadFrontier>;
  fetch?: typeof fetch;
  /** Pauses between tries of a failing node (tests shorten them). */
  backoffMs?: readonly number[];
  /** Event loop utilisation above which the verifier yields (BUSY unless given; tests, whose own loop is busy, give more than 1). */
  busyAbove?: number;
}

interface Network {
  name: string;
  rpc: JsonRpc;
  verifier: Verifier;
  watcher: WalletWatcher;
  /** The last failure logged, so a node that stays down is logged once. */
  down: string | undefined;
}

/** Event loop utilisation above which the service counts as busy: the verifier then takes a small share. */
const BUSY = 0.5;
/** What one cycle does at most, idle and busy: intake pages of rows, check rounds of settlements. */
const FULL = { pages: 20, pageRows: 5_000, rounds: 20, round: ROUND };
const YIELDING = { pages: 1, pageRows: 500, rounds: 1, round: 50 };
/** While busy, records are taken in and checked at most this often: a share of the CPU that ingest at full speed does not feel. */
const BUSY_EVERY_MS = 10_000;
/** The status counts of /metrics are read at most this often (a count over every settlement). */
const OBSERVE_MS = 15_000;

export class Reconciler {
  private readonly networks: Network[];
  private elu = performance.eventLoopUtilization();
  private observedAt = 0;
  private tookInAt = 0;
  private checkedAt = 0;
  private readonly decimals: DecimalsOf;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private version = 0;

  constructor(private readonly deps: ReconcilerDeps) {
    this.decimals = decimalsWith(deps.assetDecimals);
    const { chains } = deps;
    this.networks = Object.entries(chains.rpcUrls).map(([name, url]) => {
      const rpc = new JsonRpc(name, url, { timeoutMs: chains.rpcTimeoutMs, concurrency: chains.rpcConcurrency, batchSize: chains.rpcBatchSize, observer: deps.metrics, fetch: deps.fetch, backoffMs: deps.backoffMs });
      const settings = { confirmations: chains.confirmations[name] ?? 1, graceMs: chains.graceMs, pollMs: chains.pollMs, reorgDepth: chains.reorgDepth };
      const verifier = new Verifier({
        db: deps.db,
        rpc,
        settings,
        decimalsOf: (teamId, token) => this.decimalsOf(teamId, token),
        alert: (sql, s, kind, finding, now) =>
          raiseSettlementAlert(sql, { teamId: s.teamId, agentId: s.agentId, kind, network: s.network, txHash: s.txHash, recordId: s.recordId ?? undefined, differences: finding.differences, note: finding.note }, now),
      });
      const watcher = new WalletWatcher({
        db: deps.db,
        rpc,
        confirmations: settings.confirmations,
        graceMs: chains.graceMs,
        logRangeBlocks: chains.logRangeBlocks,
        tokens: () => this.tokensOn(name),
        decimalsOf: (t) => this.decimalsOf(t.teamId, t.token),
        intakeReached: async () => Number(((await readCursor(deps.db, RECORDS_CURSOR)) ?? 0) / 1000),
        unreported: async (sql, t, amount, now) => {
          await raiseSettlementAlert(sql, { teamId: t.teamId, agentId: t.agentId, kind: 'unreported', network: t.network, txHash: t.txHash, transfer: { token: t.token, amount, payee: t.payee, blockNumber: t.blockNumber } }, now);
          const policy = await suspendForUnreported(sql, t.teamId, t.agentId, deps.policyRevisions);
          if (policy) deps.logger.warn({ teamId: t.teamId, agentId: t.agentId, policyId: policy, txHash: t.txHash }, 'settlements: agent suspended for a payment no record claims');
        },
      });
      return { name, rpc, verifier, watcher, down: undefined };
    });
  }

  /** Runs a cycle every poll until closed. */
  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.cycle().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.deps.chains.pollMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.deps.leases.close();
  }

  /** One pass over everything this instance holds the lease of. Never throws: what fails is logged and tried next cycle. */
  async cycle(now = Date.now()): Promise<void> {
    const { logger, leases } = this.deps;
    // Requests first: while the event loop is busy (ingest at full speed), each cycle does a little; the rest waits for a quieter moment.
    const busy = performance.eventLoopUtilization(this.elu).utilization > (this.deps.busyAbove ?? BUSY);
    this.elu = performance.eventLoopUtilization();
    const budget = busy ? YIELDING : FULL;
    try {
      const intakeDue = !busy || now - this.tookInAt >= BUSY_EVERY_MS;
      if (intakeDue && (await leases.hold(RECORDS_CURSOR))) {
        this.tookInAt = now;
        await takeIn({ db: this.deps.db, events: this.deps.events, networks: new Set(this.networks.map((n) => n.name)), decimalsOf: (teamId, asset) => this.decimalsOf(teamId, asset), loadFrontier: this.deps.loadFrontier }, now, budget);
      }
    } catch (err) {
      logger.error({ err }, 'settlements: taking in new records failed; trying again next cycle');
    }
    const checksDue = !busy || now - this.checkedAt >= BUSY_EVERY_MS;
    if (checksDue) this.checkedAt = now;
    for (const network of checksDue ? this.networks : []) {
      try {
        if (!(await leases.hold(network.name))) continue;
        await this.verify(network, now, budget);
        if (network.down) logger.info({ network: network.name }, 'settlements: the node answers again');
        network.down = undefined;
      } catch (err) {
        const unavailable = err instanceof RpcUnavailable;
        if (network.down !== String(err)) {
          if (unavailable) logger.warn({ network: network.name, err: String(err) }, 'settlements: the node does not answer; checks wait for it');
          else logger.error({ network: network.name, err }, 'settlements: a verification cycle failed; trying again next cycle');
        }
        network.down = String(err);
      }
    }
    if (checksDue) await this.mirror();
    await this.observe(now);
  }

  private async verify(network: Network, now: number, budget: typeof FULL): Promise<void> {
    const head = await network.verifier.head();
    // Rounds until nothing due is left or the budget is spent (a backlog after downtime is worked through over cycles).
    for (let round = 0; round < budget.rounds && (await network.verifier.checkDue(head, now, budget.round)) === budget.round; round++);
    await network.verifier.recheckRecent(head, now);
    const cursor = await network.watcher.scan(head, now);
    this.deps.metrics?.walletLagBlocks.set({ network: network.name }, Math.max(0, head - (this.deps.chains.confirmations[network.name] ?? 1) + 1 - cursor));
  }

  /** Copies settlements whose state ClickHouse lacks; a failure leaves them for the next cycle. */
  private async mirror(): Promise<void> {
    try {
      for (let round = 0; round < 20; round++) {
        const rows = await unmirrored(this.deps.db, 1_000);
        if (rows.length === 0) return;
        await this.deps.events.insert('settlements', rows.map((s) => this.copyOf(s)));
        await this.deps.db.transaction((sql) => markMirrored(sql, rows));
      }
    } catch (err) {
      this.deps.logger.error({ err }, 'settlements: copying to ClickHouse failed; trying again next cycle');
    }
  }

  private copyOf(s: Settlement): object {
    const time = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    // Increasing across instances: a later state is written later by the lease's holder.
    this.version = Math.max(Date.now() * 1000, this.version + 1);
    return {
      team_id: s.teamId,
      id: s.id,
      record_id: s.recordId ?? '',
      agent_id: s.agentId,
      network: s.network,
      tx_hash: s.txHash,
      status: s.status,
      differences: s.differences.map((d) => d.field),
      asset: s.reported?.asset ?? s.observed?.token ?? '',
      token: s.reported?.token ?? s.observed?.token ?? '',
      reported_amount: s.reported?.amount ?? null,
      observed_amount: s.observed?.amount ?? null,
      observed_token: s.observed?.token ?? '',
      observed_payer: s.observed?.payer ?? '',
      observed_payee: s.observed?.payee ?? '',
      block_number: s.blockNumber ?? 0,
      occurred_at: time(s.occurredAt),
      checked_at: time(s.checkedAt ?? s.createdAt),
      version: this.version,
    };
  }

  private async observe(now: number): Promise<void> {
    const { metrics } = this.deps;
    if (!metrics || now - this.observedAt < OBSERVE_MS) return;
    this.observedAt = now;
    try {
      metrics.settlements.reset();
      for (const c of await statusCounts(this.deps.db)) metrics.settlements.set({ network: c.network, status: c.status }, c.n);
      for (const n of this.networks) {
        const oldest = await oldestPending(this.deps.db, n.name);
        metrics.settlementLag.set({ network: n.name }, oldest === null ? 0 : Math.max(0, now - oldest) / 1000);
      }
    } catch (err) {
      this.deps.logger.error({ err }, 'settlements: reading the metrics failed');
    }
  }

  /** A token's (or asset's) decimals for a team: ASSET_DECIMALS and the built-in table, then the team's rates. */
  private async decimalsOf(teamId: string, asset: string): Promise<number | undefined> {
    return this.decimals(asset) ?? bookDecimals(await this.deps.rates.book(teamId), asset);
  }

  /** The tokens followed on a network: the built-in contracts, ASSET_DECIMALS' addresses, and addresses teams gave decimals in their rates. */
  private async tokensOn(network: string): Promise<string[]> {
    const tokens = new Set(Object.values(TOKEN_CONTRACTS[network] ?? {}));
    for (const asset of Object.keys(this.deps.assetDecimals)) if (isEvmAddress(asset)) tokens.add(asset.toLowerCase());
    const rows = await this.deps.db.all<{ asset: string }>('SELECT DISTINCT asset FROM rates WHERE decimals IS NOT NULL');
    for (const { asset } of rows) if (isEvmAddress(asset)) tokens.add(asset.toLowerCase());
    return [...tokens].sort();
  }
}
