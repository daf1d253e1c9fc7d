/**
 * Values the records stored before values existed (events.currency ''), of the teams of this
 * registry, once every chunk written before them is loaded: each in its team's currency by the
 * rates stored for its time (the built-in pegs, and the team's own), as ingest values a record now.
 * Per team and asset, the rollups get rows of value first (each statement under a deduplication
 * token of its own), the pair is marked in value_backfills, then mutations write value, currency
 * and valuation into events, in the background. A run cut short is completed by the next: the
 * marked pairs' rollups are never given their values twice; their mutations are sent again.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import BigNumber from 'bignumber.js';
import { assetKey, BUILT_IN_RATES, rateFactor, valuationText, type Rate, type RateFactor } from '../domain/rates.js';
import { DEFAULT_CURRENCY } from '../domain/currencies.js';
import { UNPRICED_CONDITION, valueBackfillInserts } from '../analytics/rollups.js';
import type { EventStore } from '../stores/clickhouse.js';
import { postgresOnly, type Database } from '../stores/sql.js';
import { LOG_FORMAT } from './log.js';

/** One asset of one team among the records to value: its times and largest amount. */
interface Group {
  team_id: string;
  asset: string;
  first: string;
  last: string;
  largest: string;
}

/** A time range of a group's records and what values them then. */
interface Segment {
  team: string;
  asset: string;
  from: number;
  /** Exclusive; undefined: on. */
  to: number | undefined;
  valued: RateFactor | undefined;
}

/** Decimal256 holds 76 digits: a factor whose product with the largest amount needs more is left unvalued (logged). */
const DECIMAL256_DIGITS = 76;

/** True once every chunk and block in an older format is loaded: only then are all records to value in ClickHouse. */
async function olderChunksLeft(db: Database): Promise<boolean> {
  const left = await db.get(
    db.dialect === 'postgres'
      ? postgresOnly(`SELECT 1 AS left FROM ingest_chunks WHERE format <> '${LOG_FORMAT}' UNION ALL SELECT 1 FROM ingest_blocks WHERE format <> '${LOG_FORMAT}' LIMIT 1`)
      : `SELECT 1 AS left FROM ingest_log WHERE format <> '${LOG_FORMAT}' UNION ALL SELECT 1 FROM ingest_blocks WHERE format <> '${LOG_FORMAT}' LIMIT 1`,
  );
  return left !== undefined;
}

/**
 * Values what was stored unvalued; resolves true when nothing is left to value, false when there is
 * (chunks of an older format still to load, or the mutations sent still running): call again later.
 */
export async function backfillValues(store: EventStore, db: Database, logId: string, logger: Logger): Promise<boolean> {
  if (await olderChunksLeft(db)) return false;
  // The mutations sent before are still at work: they value what is left.
  const [running] = await store.query<{ n: string }>("SELECT toString(count()) AS n FROM system.mutations WHERE database = currentDatabase() AND table = 'events' AND NOT is_done");
  if (Number(running?.n ?? 0) > 0) return false;
  // The teams of this registry: their rates and currencies are here.
  const known = (await db.all<{ id: string }>('SELECT id FROM teams')).map((t) => t.id);
  const unvalued = "currency = '' AND has({teams:Array(String)}, team_id)";
  const groups = await store.query<Group>(
    `SELECT team_id, toString(asset) AS asset, toString(toUnixTimestamp64Milli(min(event_time))) AS first,
            toString(toUnixTimestamp64Milli(max(event_time))) AS last, toString(max(amount)) AS largest
       FROM events WHERE ${unvalued} GROUP BY team_id, asset`,
    { teams: known },
  );
  if (groups.length === 0) return true;
  const started = performance.now();
  const teams = new Map<string, { currency: string; histories: Map<string, Rate[]> }>();
  for (const teamId of new Set(groups.map((g) => g.team_id))) {
    const team = await db.get<{ currency: string }>('SELECT currency FROM teams WHERE id = ?', [teamId]);
    const versions = await db.all<{ asset: string; valid_from: number | string; value: string | null; currency: string | null; decimals: number | null }>(
      'SELECT asset, valid_from, value, currency, decimals FROM rates WHERE team_id = ? ORDER BY asset, valid_from DESC',
      [teamId],
    );
    const histories = new Map<string, Rate[]>();
    for (const v of versions) {
      const rate: Rate = { asset: v.asset, value: v.value, currency: v.currency, validFrom: Number(v.valid_from), decimals: v.decimals, source: 'team' };
      (histories.get(v.asset) ?? histories.set(v.asset, []).get(v.asset)!).push(rate);
    }
    teams.set(teamId, { currency: team?.currency ?? DEFAULT_CURRENCY, histories });
  }
  const segments: Segment[] = [];
  let unexact = 0;
  for (const group of groups) {
    const team = teams.get(group.team_id)!;
    const rates = (asset: string) => team.histories.get(asset);
    const first = Number(group.first);
    const last = Number(group.last);
    // Where the asset's rate or its currency's rate changes within the group's times.
    const changes = new Set<number>([first]);
    const addChanges = (history: readonly Rate[] | undefined) => {
      for (const v of history ?? []) if (v.validFrom > first && v.validFrom <= last) changes.add(v.validFrom);
    };
    const key = assetKey(group.asset);
    addChanges(rates(key));
    const currencies = new Set<string>();
    for (const v of rates(key) ?? []) if (v.currency) currencies.add(v.currency);
    const peg = BUILT_IN_RATES.get(key);
    if (peg?.currency) currencies.add(peg.currency);
    for (const c of currencies) addChanges(rates(c));
    const starts = [...changes].sort((a, b) => a - b);
    starts.forEach((from, i) => {
      let valued = rateFactor(rates, group.asset, from, team.currency);
      if (valued && !fits(group.largest, valued.factor)) {
        unexact++;
        valued = undefined;
      }
      segments.push({ team: group.team_id, asset: group.asset, from: i === 0 ? Number.MIN_SAFE_INTEGER : from, to: starts[i + 1], valued });
    });
  }
  if (unexact > 0) logger.warn({ segments: unexact }, 'values: a rate too long to multiply exactly in Decimal256 left some stored records unvalued');
  const done = new Set(
    (await db.all<{ team_id: string; asset: string }>('SELECT team_id, asset FROM value_backfills')).map((r) => `${r.team_id}\u0000${r.asset}`),
  );
  let batches = 0;
  for (const group of groups) {
    const own = segments.filter((s) => s.team === group.team_id && s.asset === group.asset);
    const currency = teams.get(group.team_id)!.currency;
    const rollupsIn = done.has(`${group.team_id}\u0000${group.asset}`);
    // A statement values at most SEGMENTS_PER_STATEMENT time ranges: its text stays far below max_query_size.
    for (let at = 0; at < own.length; at += SEGMENTS_PER_STATEMENT) {
      const batch = own.slice(at, at + SEGMENTS_PER_STATEMENT);
      const { sql, params } = batchStatements(group, batch, currency, known);
      if (!rollupsIn) {
        const name = createHash('sha256').update(`${group.team_id}\u0000${group.asset}\u0000${at}`).digest('hex').slice(0, 24);
        for (const insert of valueBackfillInserts(sql.value, sql.currency)) await store.command(insert.sql(sql.rows, `${logId}:values:${name}:${insert.name}`), params);
      }
      // Applied in the background by the engine (a large table takes a while); the rows it has not reached still read currency ''.
      await store.command(`ALTER TABLE events UPDATE value = ${sql.value}, valuation = ${sql.valuation}, currency = ${sql.currency} WHERE ${sql.rows} SETTINGS mutations_sync = 0`, params);
      batches++;
    }
    if (!rollupsIn) await db.run('INSERT INTO value_backfills (team_id, asset, done_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [group.team_id, group.asset, Date.now()]);
  }
  logger.info({ groups: groups.length, segments: segments.length, statements: batches, ms: Math.round(performance.now() - started) }, 'values: records stored before values existed are being valued');
  return false;
}

/** Time ranges of one team's asset valued by one statement. */
const SEGMENTS_PER_STATEMENT = 64;

/** The expressions valuing one batch of a group's time ranges, and the condition of its rows; every value from the user as a parameter. */
function batchStatements(group: Group, batch: readonly Segment[], currency: string, teams: readonly string[]) {
  const params: Record<string, unknown> = { teams, team: group.team_id, asset: group.asset, currency };
  const time = (from: number, to: number | undefined) =>
    [from > Number.MIN_SAFE_INTEGER ? `toUnixTimestamp64Milli(event_time) >= ${from}` : '', to !== undefined ? `toUnixTimestamp64Milli(event_time) < ${to}` : '']
      .filter(Boolean)
      .join(' AND ') || '1';
  const rows = `currency = '' AND has({teams:Array(String)}, team_id) AND team_id = {team:String} AND asset = {asset:String} AND ${time(batch[0]!.from, batch.at(-1)!.to)}`;
  // Nothing paid is worth 0 without a rate, as at ingest; an amount_raw of unknown decimals stays unvalued.
  const valueOf = (s: Segment) => (s.valued ? product(s.valued.factor) : 'if(amount = 0, toDecimal256(0, 18), NULL)');
  const raw = `if(${UNPRICED_CONDITION}, NULL, multiIf(${batch.map((s) => `${time(s.from, s.to)}, ${valueOf(s)}`).join(', ')}, NULL))`;
  const value = `CAST(if(${raw} < toDecimal256('100000000000000000000', 0), ${raw}, NULL) AS Nullable(Decimal(38, 18)))`;
  const texts = batch.map((s, i) => {
    if (!s.valued) return "''";
    params[`v${i}`] = valuationText(s.valued);
    return `{v${i}:String}`;
  });
  // A value left out (too large) keeps no valuation, as at ingest.
  const valuation = `if(isNull(${value}), '', multiIf(${batch.map((s, i) => `${time(s.from, s.to)}, ${texts[i]}`).join(', ')}, ''))`;
  return { sql: { rows, value, valuation, currency: '{currency:String}' }, params };
}

/** The amount times a factor, rounded half-even to 18 places once; the factor's digits are ours (a product of validated rates). */
function product(factor: string): string {
  if (!/^\d+(\.\d+)?$/.test(factor)) throw new Error(`not a rate factor: ${factor}`);
  if (factor === '1') return 'toDecimal256(amount, 18)';
  const places = factor.includes('.') ? factor.length - factor.indexOf('.') - 1 : 0;
  // Back to 18 places (exact once rounded), so every branch has one type and none narrows the others.
  return `toDecimal256(roundBankers(toDecimal256(amount, 18) * toDecimal256('${factor}', ${places}), 18), 18)`;
}

/** Whether the largest amount times the factor fits Decimal256 at the product's scale (18 plus the factor's places). */
function fits(largest: string, factor: string): boolean {
  const places = factor.includes('.') ? factor.length - factor.indexOf('.') - 1 : 0;
  const whole = new BigNumber(largest).times(factor).integerValue(BigNumber.ROUND_FLOOR).toFixed().length;
  return whole + 18 + places <= DECIMAL256_DIGITS;
}
