import type { Rate } from '../domain/rates.js';
import type { Sql } from '../stores/sql.js';
import { announceRatesChange } from './changes.js';

interface RateRow {
  asset: string;
  valid_from: number | string;
  value: string | null;
  currency: string | null;
  decimals: number | null;
  created_at: number | string;
}

/** A team's version of a rate, with when it was set. */
export interface TeamRate extends Rate {
  createdAt: number;
}

const toRate = (row: RateRow): TeamRate => ({
  asset: row.asset,
  value: row.value,
  currency: row.currency,
  validFrom: Number(row.valid_from),
  decimals: row.decimals,
  source: 'team',
  createdAt: Number(row.created_at),
});

/** A team may value at most this many assets of its own (each with any number of versions). */
export const MAX_RATED_ASSETS_PER_TEAM = 1_000;

/** A version at this valid_from exists already: versions are never changed. */
export class RateVersionTaken extends Error {}

/** Too many assets rated: MAX_RATED_ASSETS_PER_TEAM. */
export class TooManyRatedAssets extends Error {}


/** The version of each asset the team rates in effect at `at` (an ended one too), by asset: one row per asset, however long the histories. */
export async function ratesAt(sql: Sql, teamId: string, at: number): Promise<Map<string, TeamRate>> {
  const rows = await sql.all<RateRow>(
    `SELECT r.asset, r.valid_from, r.value, r.currency, r.decimals, r.created_at FROM rates r
      WHERE r.team_id = ? AND r.valid_from = (SELECT max(v.valid_from) FROM rates v WHERE v.team_id = r.team_id AND v.asset = r.asset AND v.valid_from <= ?)`,
    [teamId, at],
  );
  return new Map(rows.map((row) => [row.asset, toRate(row)]));
}

/** Every asset's versions from `from` on (after it), newest first: what a book in memory holds besides ratesAt(from). */
export async function rateVersionsFrom(sql: Sql, teamId: string, from: number): Promise<TeamRate[]> {
  const rows = await sql.all<RateRow>(
    'SELECT asset, valid_from, value, currency, decimals, created_at FROM rates WHERE team_id = ? AND valid_from > ? ORDER BY asset, valid_from DESC',
    [teamId, from],
  );
  return rows.map(toRate);
}

/** The decimals the asset's latest version before `before` that gives any gave, if one did. */
export async function decimalsBefore(sql: Sql, teamId: string, asset: string, before: number): Promise<number | undefined> {
  const row = await sql.get<{ decimals: number }>(
    'SELECT decimals FROM rates WHERE team_id = ? AND asset = ? AND valid_from < ? AND decimals IS NOT NULL ORDER BY valid_from DESC LIMIT 1',
    [teamId, asset, before],
  );
  return row?.decimals;
}

/** Versions of one asset, latest valid_from first, those before `before` (a page's end) only. */
export async function rateVersions(sql: Sql, teamId: string, asset: string, limit: number, before?: number): Promise<TeamRate[]> {
  const rows = await sql.all<RateRow>(
    `SELECT asset, valid_from, value, currency, decimals, created_at FROM rates
      WHERE team_id = ? AND asset = ? AND valid_from < ? ORDER BY valid_from DESC LIMIT ?`,
    [teamId, asset, before ?? Number.MAX_SAFE_INTEGER, limit],
  );
  return rows.map(toRate);
}

/**
 * Adds a version (a rate, or the end of the team's rate when `value` is null); run it in a
 * transaction that took the team's lock (lockTeam) before reading what it decides from.
 */
export async function addRateVersion(sql: Sql, teamId: string, rate: Omit<Rate, 'source'>, now: number): Promise<TeamRate> {
  if (await sql.get('SELECT 1 AS taken FROM rates WHERE team_id = ? AND asset = ? AND valid_from = ?', [teamId, rate.asset, rate.validFrom])) {
    throw new RateVersionTaken(`${rate.asset} has a version from ${new Date(rate.validFrom).toISOString()} already`);
  }
  if (!(await sql.get('SELECT 1 AS rated FROM rates WHERE team_id = ? AND asset = ? LIMIT 1', [teamId, rate.asset]))) {
    const { n } = (await sql.get<{ n: number | string }>('SELECT count(DISTINCT asset) AS n FROM rates WHERE team_id = ?', [teamId]))!;
    if (Number(n) >= MAX_RATED_ASSETS_PER_TEAM) throw new TooManyRatedAssets(`the team rates ${MAX_RATED_ASSETS_PER_TEAM.toLocaleString('en')} assets already`);
  }
  try {
    await sql.run('INSERT INTO rates (team_id, asset, valid_from, value, currency, decimals, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      teamId, rate.asset, rate.validFrom, rate.value, rate.currency, rate.decimals, now,
    ]);
  } catch (err) {
    // Another instance added this version meanwhile (PostgreSQL).
    const { code, constraint } = err as { code?: string; constraint?: string };
    if (code === '23505' && constraint === 'rates_pkey') throw new RateVersionTaken(`${rate.asset} has a version from ${new Date(rate.validFrom).toISOString()} already`);
    throw err;
  }
  await announceRatesChange(sql, teamId, { version: rate });
  return { ...rate, source: 'team', createdAt: now };
}
