/**
 * Values the records stored before values existed (events.currency ''), of the teams of this
 * registry, once every chunk written before them is loaded: each in its team's currency by the rates stored for its time (the built-in
 * pegs, and the team's own), as ingest values a record now. The rollups get rows of value for them
 * first (each under its own deduplication token), then one mutation writes value, currency and
 * valuation into events. Both read `currency = ''`: a run cut short is completed by the next.
 */
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
 * Values what was stored unvalued; resolves true when nothing is left to value (false: chunks of
 * an older format are still to load; call again after). Repeated, it does nothing.
 */
export async function backfillValues(store: EventStore, db: Database, logId: string, logger: Logger): Promise<boolean> {
  if (await olderChunksLeft(db)) return false;
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
  const params: Record<string, unknown> = { teams: known };
  const param = (value: string) => {
    const name = `p${Object.keys(params).length}`;
    params[name] = value;
    return `{${name}:String}`;
  };
  const teamParams = new Map<string, string>();
  const teamParam = (team: string) => teamParams.get(team) ?? (teamParams.set(team, param(team)), teamParams.get(team)!);
  const condition = (s: Segment) =>
    [`team_id = ${teamParam(s.team)}`, `asset = ${param(s.asset)}`, s.from > Number.MIN_SAFE_INTEGER ? `toUnixTimestamp64Milli(event_time) >= ${s.from}` : '', s.to !== undefined ? `toUnixTimestamp64Milli(event_time) < ${s.to}` : '']
      .filter(Boolean)
      .join(' AND ');
  const conditions = segments.map(condition);
  // Nothing paid is worth 0 without a rate, as at ingest; an amount_raw of unknown decimals stays unvalued.
  const valueOf = (s: Segment) => (s.valued ? product(s.valued.factor) : 'if(amount = 0, toDecimal256(0, 18), NULL)');
  const value = `if(${UNPRICED_CONDITION}, NULL, multiIf(${segments.map((s, i) => `${conditions[i]}, ${valueOf(s)}`).join(', ')}, NULL))`;
  const stored = `CAST(if(${value} < toDecimal256('100000000000000000000', 0), ${value}, NULL) AS Nullable(Decimal(38, 18)))`;
  const valuation = `multiIf(${segments.map((s, i) => `${conditions[i]} AND NOT (${UNPRICED_CONDITION}), ${s.valued ? param(valuationText(s.valued)) : "''"}`).join(', ')}, '')`;
  const currency = `multiIf(${[...teams].map(([team, t]) => `team_id = ${teamParam(team)}, '${t.currency}'`).join(', ')}, '${DEFAULT_CURRENCY}')`;
  for (const insert of valueBackfillInserts(stored, currency)) await store.command(insert.sql(unvalued, `${logId}:values:${insert.name}`), params);
  await store.command(`ALTER TABLE events UPDATE value = ${stored}, valuation = ${valuation}, currency = ${currency} WHERE ${unvalued} SETTINGS mutations_sync = 2`, params);
  logger.info({ groups: groups.length, segments: segments.length, ms: Math.round(performance.now() - started) }, 'values: records stored before values existed are valued');
  return true;
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
