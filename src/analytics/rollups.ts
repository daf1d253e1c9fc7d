/** What the rollup tables hold, defined once: the loader fills them with these inserts, ./queries.ts sums their partial rows. */

/** The dimensions of the by-dimension rollups, and the events column each one is rolled up from. */
export const DIMENSION_COLUMN = {
  agent: 'agent_id',
  domain: 'toString(domain)',
  url: 'endpoint',
  category: 'toString(category)',
  network: 'toString(network)',
  outcome: 'toString(policy_evaluation)',
  asset: 'toString(asset)',
  // Only unpriced records (UNPRICED_CONDITION), by asset: the rollups hold no row for the others.
  unpriced: 'toString(asset)',
} as const;

/** A dimension the analytics can group by. */
export type Dimension = keyof typeof DIMENSION_COLUMN;

/** A non-zero amount_raw in an asset of unknown decimals, stored as amount 0: unpriced, not spend. */
export const UNPRICED_CONDITION = "amount_text = '' AND amount = 0 AND match(amount_raw, '[1-9]')";

/** The dimensions the rollups had from the start: every event counts once in each. */
const FIRST_DIMENSIONS = ['agent', 'domain', 'url', 'category', 'network', 'outcome'] as const;

const DIMENSIONS = `[${FIRST_DIMENSIONS.map((d) => `('${d}', ${DIMENSION_COLUMN[d]})`).join(', ')}]`;

/** Dimensions added after data existed: every event once under its asset, an unpriced one also under `unpriced`. */
const LATER_DIMENSIONS = `arrayConcat([('asset', ${DIMENSION_COLUMN.asset})], if(${UNPRICED_CONDITION}, [('unpriced', ${DIMENSION_COLUMN.unpriced})], []))`;

/** The value columns of every rollup, per currency (schema/clickhouse/009). */
const VALUE_SUMS = 'sum(toDecimal256(ifNull(value, 0), 18)), countIf(value IS NOT NULL)';

const byDimensions = (dimensions: string, at: string) =>
  `SELECT team_id, dim.1, ${at}, dim.2, sum(toDecimal256(amount, 18)), count(), max(amount), currency, ${VALUE_SUMS}
     FROM events ARRAY JOIN ${dimensions} AS dim WHERE {rows}
    GROUP BY team_id, dim.1, ${at}, dim.2, currency`;

/** Every dimension of the by-dimension rollups, as each block's insert fills them now. */
const ALL_DIMENSIONS = `arrayConcat(${DIMENSIONS}, ${LATER_DIMENSIONS})`;

interface Rollup {
  /** The table, and the name its inserts' deduplication tokens start with. */
  name: string;
  table: string;
  select: string;
  /** A block recorded before LATER_DIMENSIONS keeps its first insert and token, so a retry of it is dropped or completed, never doubled. */
  legacy?: string;
  later?: string;
  /** Rows of value alone (no spend, no events: those rows exist) for records valued after they were rolled up. */
  values(value: string, currency: string): string;
}

/** Each rollup, filled from rows of events; a rollup row is a partial: readers sum them. */
const ROLLUPS: Rollup[] = (['hour', 'day'] as const)
  .map((unit): Rollup => {
    const [name, column, at] = unit === 'hour' ? ['spend_hourly_by', 'hour', 'toStartOfHour(event_time)'] : ['spend_daily_by', 'day', 'toDate(event_time)'];
    return {
      name,
      table: `${name} (team_id, dimension, ${column}, key, spend, events, max_amount, currency, value, valued)`,
      select: byDimensions(ALL_DIMENSIONS, at),
      values: (value, currency) =>
        `SELECT team_id, dim.1, ${at}, dim.2, toDecimal256(0, 18), toUInt64(0), toDecimal128(0, 18), ${currency} AS valued_in,
                sum(toDecimal256(ifNull(${value}, 0), 18)), countIf(${value} IS NOT NULL)
           FROM events ARRAY JOIN ${ALL_DIMENSIONS} AS dim WHERE {rows}
          GROUP BY team_id, dim.1, ${at}, dim.2, valued_in`,
      legacy: byDimensions(DIMENSIONS, at),
      later: byDimensions(LATER_DIMENSIONS, at),
    };
  })
  .concat({
    name: 'spend_minutely',
    table: 'spend_minutely (team_id, minute, spend, events, currency, value, valued)',
    select: `SELECT team_id, toStartOfMinute(event_time), sum(toDecimal256(amount, 18)), count(), currency, ${VALUE_SUMS}
               FROM events WHERE {rows} GROUP BY team_id, toStartOfMinute(event_time), currency`,
    values: (value, currency) =>
      `SELECT team_id, toStartOfMinute(event_time), toDecimal256(0, 18), toUInt64(0), ${currency} AS valued_in,
              sum(toDecimal256(ifNull(${value}, 0), 18)), countIf(${value} IS NOT NULL)
         FROM events WHERE {rows} GROUP BY team_id, toStartOfMinute(event_time), valued_in`,
  });

/** One INSERT filling a rollup from the rows of events a condition selects. */
export interface RollupInsert {
  /** The rollup it fills. */
  rollup: string;
  /** Names it in its deduplication token. */
  name: string;
  /** The statement for the rows `rows` selects (a condition of our own, never user input), under `token`. */
  sql(rows: string, token: string): string;
}

const insertOf = (rollup: Rollup, select: string, name: string): RollupInsert => ({
  rollup: rollup.name,
  name,
  sql: (rows, token) => `INSERT INTO ${rollup.table} SETTINGS insert_deduplication_token = '${token}', max_threads = 1 ${select.replace('{rows}', rows)}`,
});

const CURRENT_INSERTS = ROLLUPS.map((r) => (r.legacy ? insertOf(r, r.select, `${r.name}:all`) : insertOf(r, r.select, r.name)));

const LEGACY_INSERTS = ROLLUPS.flatMap((r) => (r.legacy ? [insertOf(r, r.legacy, r.name), insertOf(r, r.later!, `${r.name}:asset`)] : [insertOf(r, r.select, r.name)]));

/** The inserts filling every rollup from one block's rows; `legacy`: recorded before the later dimensions, so it keeps its first tokens. */
export function blockRollupInserts(legacy: boolean): readonly RollupInsert[] {
  return legacy ? LEGACY_INSERTS : CURRENT_INSERTS;
}

/** The inserts that fill the later dimensions for rows loaded before they existed. */
export const LATER_DIMENSION_BACKFILLS: readonly RollupInsert[] = ROLLUPS.filter((r) => r.later).map((r) => insertOf(r, r.later!, `backfill:${r.name}:asset`));

/** The inserts giving the rollups the value of records valued after they were rolled up: `value` and `currency` are expressions over events. */
export function valueBackfillInserts(value: string, currency: string): readonly RollupInsert[] {
  return ROLLUPS.map((r) => insertOf(r, r.values(value, currency), r.name));
}
