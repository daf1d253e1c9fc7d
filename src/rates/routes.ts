import { audited } from '../audit-log/record.js';
import { isCurrency } from '../domain/currencies.js';
import { assetKey, BUILT_IN_RATES, rateAt, valueAt, type Rate } from '../domain/rates.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { ApiError, type FieldError } from '../http/errors.js';
import { defineRoute } from '../http/routes.js';
import { findTeam, lockTeam } from '../teams/repository.js';
import { addRateVersion, decimalsBefore, rateVersions, ratesAt, RateVersionTaken, TooManyRatedAssets, type TeamRate } from './repository.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** A rate as the API shows it. */
function rateBody(rate: Rate | TeamRate, valueInTeamCurrency?: string | null) {
  return {
    asset: rate.asset,
    value: rate.value,
    currency: rate.currency,
    valid_from: iso(rate.validFrom),
    decimals: rate.decimals,
    source: rate.source,
    ...(valueInTeamCurrency !== undefined ? { value_in_team_currency: valueInTeamCurrency } : {}),
    createdAt: 'createdAt' in rate ? iso(rate.createdAt) : null,
  };
}

const invalid = (where: 'body' | 'path', errors: FieldError[]) =>
  new ApiError('validation_failed', `Request ${where} is invalid: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, errors);

/** The asset of the path, as rates key it; 400 naming `asset` when it cannot name one. */
function pathAsset(raw: string): string {
  const key = assetKey(raw);
  // Measured as stored: upper-casing may lengthen a symbol.
  // eslint-disable-next-line no-control-regex
  if (key.length < 1 || key.length > 128 || /[\s\u0000-\u001f\u007f/]/.test(key)) {
    throw invalid('path', [{ field: 'asset', message: 'must be an asset symbol, a token address or a currency code (1 to 128 characters, no spaces)' }]);
  }
  return key;
}

/** What a rate's valid_from may be: from the epoch to the end of what records may carry. */
const VALID_FROM_RANGE = [0, Date.UTC(2299, 11, 31, 23, 59, 59, 999)] as const;

const EXAMPLE_RATE = {
  asset: 'ETH',
  value: '3050.25',
  currency: 'USD',
  valid_from: '2026-12-02T10:00:00.000Z',
  decimals: 18,
  source: 'team',
  createdAt: '2026-12-02T09:58:12.000Z',
};

export const listRatesRoute = defineRoute({
  method: 'get',
  path: '/rates',
  operationId: 'listRates',
  summary: 'Every asset the team can value now, with its rate',
  description:
    'The built-in pegs (USDC, USDT, PYUSD, USDbC at 1 USD and EURC at 1 EUR, by symbol and by their known token contracts) and the team\'s own rates ' +
    'in effect now (a team\'s rate of an asset wins over its peg), by asset. `value_in_team_currency`: one unit in the team\'s ' +
    'currency now, through at most one more rate (that of the rate\'s currency); null when none converts it.',
  tag: 'rates',
  responses: {
    200: {
      description: 'The rates in effect',
      schema: 'rate-list.json',
      example: {
        currency: 'USD',
        data: [
          { ...EXAMPLE_RATE, value_in_team_currency: '3050.25' },
          { asset: 'EURC', value: '1', currency: 'EUR', valid_from: '1970-01-01T00:00:00.000Z', decimals: 6, source: 'built-in', value_in_team_currency: '1.08', createdAt: null },
        ],
      },
    },
  },
  async handler({ team, deps }) {
    const found = await findTeam(deps.db, team.teamId);
    if (!found) throw new Error(`team ${team.teamId} of an authenticated key is missing`);
    const now = Date.now();
    const own = await ratesAt(deps.db, team.teamId, now);
    const history = (asset: string) => {
      const current = own.get(asset);
      return current ? [current] : undefined;
    };
    const assets = [...new Set([...BUILT_IN_RATES.keys(), ...own.keys()])].sort();
    const data = [];
    for (const asset of assets) {
      const rate = rateAt(history(asset), asset, now);
      if (!rate) continue;
      const valued = valueAt(history, asset, '1', now, found.currency);
      data.push(rateBody(rate, typeof valued === 'object' ? valued.value : null));
    }
    return { body: { currency: found.currency, data } };
  },
});

const isHistoryCursor = (v: unknown): v is { validFrom: number } =>
  typeof v === 'object' && v !== null && Number.isSafeInteger((v as { validFrom: unknown }).validFrom);

export const rateHistoryRoute = defineRoute<unknown, { limit?: number; cursor?: string }>({
  method: 'get',
  path: '/rates/:asset',
  operationId: 'getRateHistory',
  summary: "An asset's rate versions, latest first",
  description:
    'Every version the team set (an ended rate shows `value: null` from its end), latest `valid_from` first, then the built-in ' +
    'peg where there is one. 404 when the asset has neither.',
  tag: 'rates',
  query: 'rate-history-query.json',
  responses: {
    200: { description: 'A page of versions', schema: 'rate-history.json', example: { data: [EXAMPLE_RATE], next_cursor: null } },
    404: { description: 'The team has no rate of the asset, and it has no built-in peg', schema: 'error.json' },
  },
  async handler({ params, query, team, deps }) {
    const asset = pathAsset(params.asset!);
    const limit = query.limit ?? 100;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isHistoryCursor);
    // The team's versions, then the built-in peg as the history's oldest row.
    const fetched = await rateVersions(deps.db, team.teamId, asset, limit + 1, after?.validFrom);
    const peg = BUILT_IN_RATES.get(asset);
    const all: (Rate | TeamRate)[] = fetched.length <= limit && peg ? [...fetched, peg] : fetched;
    const page = all.slice(0, limit);
    const last = page.at(-1);
    const next_cursor = all.length > limit && last ? encodeCursor({ validFrom: last.validFrom }) : null;
    const data = page.map((r) => rateBody(r));
    if (data.length === 0 && after === undefined) throw new ApiError('not_found', `The team has no rate of ${asset}, and it has no built-in peg`);
    return { body: { data, next_cursor } };
  },
});

export const putRateRoute = defineRoute<{ value: string; currency: string; valid_from?: string; decimals?: number }>({
  method: 'put',
  path: '/rates/:asset',
  operationId: 'putRate',
  summary: "Set an asset's rate from a time on",
  description:
    'A new version: one unit of the asset (a symbol, a token address, or a currency code: `PUT /rates/EUR {"value": "1.08", ' +
    '"currency": "USD"}` converts EUR into USD) is worth `value` of `currency` from `valid_from` (default now) until its next ' +
    'version. Versions are kept; one at the same `valid_from` is a 409. `decimals` left out: those of the version it follows ' +
    '(or of the built-in peg).',
  tag: 'rates',
  body: 'rate-put.json',
  bodyExample: { value: '3050.25', currency: 'USD', valid_from: '2026-12-02T10:00:00Z', decimals: 18 },
  responses: {
    200: { description: 'The version added', schema: 'rate.json', example: EXAMPLE_RATE },
    409: { description: 'A version from that time exists (`details` names `valid_from`), or the team rates 1,000 assets already (`details` names `asset`)', schema: 'error.json' },
  },
  async handler(ctx) {
    const { params, body } = ctx;
    const asset = pathAsset(params.asset!);
    const errors: FieldError[] = [];
    if (!isCurrency(body.currency)) errors.push({ field: 'currency', message: `"${body.currency}" is not an ISO 4217 currency code` });
    if (/^0(\.0+)?$/.test(body.value)) errors.push({ field: 'value', message: 'must be above 0 (DELETE ends a rate)' });
    if (body.currency === asset) errors.push({ field: 'currency', message: `must differ from the asset (${asset})` });
    if (isCurrency(asset) && body.decimals !== undefined) errors.push({ field: 'decimals', message: 'is for assets, not for a currency' });
    const validFrom = body.valid_from === undefined ? Date.now() : Date.parse(body.valid_from);
    if (!Number.isFinite(validFrom) || validFrom < VALID_FROM_RANGE[0] || validFrom > VALID_FROM_RANGE[1]) {
      errors.push({ field: 'valid_from', message: 'must be a time from 1970-01-01T00:00:00Z to 2299-12-31T23:59:59Z' });
    }
    if (errors.length > 0) throw invalid('body', errors);
    try {
      const added = await audited(ctx, async (sql) => {
        // The team first: what this version follows is read as of the writes before it.
        await lockTeam(sql, ctx.team.teamId);
        const [prior] = await rateVersions(sql, ctx.team.teamId, asset, 1, validFrom);
        // Decimals left out carry on from the versions before (or the peg).
        const decimals = isCurrency(asset) ? null : (body.decimals ?? (await decimalsBefore(sql, ctx.team.teamId, asset, validFrom)) ?? BUILT_IN_RATES.get(asset)?.decimals ?? null);
        const rate = await addRateVersion(sql, ctx.team.teamId, { asset, value: body.value, currency: body.currency, validFrom, decimals }, Date.now());
        const shown = (r: Pick<Rate, 'value' | 'currency' | 'decimals'>) => ({ value: r.value, currency: r.currency, decimals: r.decimals });
        return { result: rate, log: { action: 'rate.set', resourceType: 'rate', resourceId: asset, before: prior ? shown(prior) : null, after: { ...shown(rate), valid_from: iso(rate.validFrom) } } };
      });
      return { body: rateBody(added) };
    } catch (err) {
      if (err instanceof RateVersionTaken) throw new ApiError('conflict', err.message, [{ field: 'valid_from', message: 'has a version already: versions are never changed' }]);
      if (err instanceof TooManyRatedAssets) throw new ApiError('conflict', `Not rated: ${err.message}`, [{ field: 'asset', message: 'is one more than the team may rate' }]);
      throw err;
    }
  },
});

export const deleteRateRoute = defineRoute({
  method: 'delete',
  path: '/rates/:asset',
  operationId: 'endRate',
  summary: "End the team's rate of an asset from now on",
  description:
    'Adds a version without a value from now: records from now on are valued by the built-in peg where there is one, else ' +
    'they are unvalued. The history stays. A version scheduled after now still starts at its `valid_from`. 404 when the team ' +
    'has no rate of the asset in effect.',
  tag: 'rates',
  responses: {
    200: { description: 'The ending version', schema: 'rate.json', example: { ...EXAMPLE_RATE, value: null, currency: null, decimals: null } },
    404: { description: 'The team has no rate of the asset in effect now', schema: 'error.json' },
  },
  async handler(ctx) {
    const asset = pathAsset(ctx.params.asset!);
    const now = Date.now();
    let ended: TeamRate | undefined;
    try {
      ended = await audited(ctx, async (sql) => {
        // The team first: two ends at once end it once.
        await lockTeam(sql, ctx.team.teamId);
        const [current] = await rateVersions(sql, ctx.team.teamId, asset, 1, now + 1);
        if (!current || current.value === null) return { result: undefined };
        const end = await addRateVersion(sql, ctx.team.teamId, { asset, value: null, currency: null, validFrom: now, decimals: null }, now);
        return { result: end, log: { action: 'rate.end', resourceType: 'rate', resourceId: asset, before: { value: current.value, currency: current.currency }, after: { value: null, currency: null } } };
      });
    } catch (err) {
      if (err instanceof RateVersionTaken) throw new ApiError('conflict', `${err.message}: set in this very millisecond, end it again`, [{ field: 'asset', message: 'has a version from this millisecond' }]);
      throw err;
    }
    if (!ended) throw new ApiError('not_found', `The team has no rate of ${asset} in effect`);
    return { body: rateBody(ended) };
  },
});

export const rateRoutes = [listRatesRoute, rateHistoryRoute, putRateRoute, deleteRateRoute];
