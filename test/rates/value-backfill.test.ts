/**
 * Records stored before values existed (events.currency '') are valued once, by the rates stored
 * for their time, in events and in every rollup, exactly; on SQLite and PostgreSQL.
 */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import pino from 'pino';
import { insertBlock } from '../../src/ingest/blocks.js';
import { recordToRow, type EventRow } from '../../src/ingest/records.js';
import { rowBinaryOf } from '../../src/ingest/rowbinary.js';
import { backfillValues } from '../../src/ingest/value-backfill.js';
import { api, describeOnEachRegistry, newTeam, testEnv } from '../helpers/context.js';
import { forEachDialect } from '../helpers/dialects.js';

const DAY = 86_400_000;

/** Rows as an earlier version stored them: no value, no currency. */
function oldRows(teamId: string, records: Record<string, unknown>[]): EventRow[] {
  return records.map((r, i) => {
    const made = recordToRow({ agent_id: 'old-bot', endpoint: 'https://api.example.com/old', method: 'GET', ...r }, testEnv().schemas, teamId, 'events', Date.now());
    if (!made.ok) throw new Error(JSON.stringify(made.errors));
    return { ...made.row, ingest_seq: i + 1, value: null, currency: '', valuation: '' };
  });
}

type Sums = { events: string; value: string; valued: string };

/** Value and counts in events and in each rollup (its outcome dimension: every event once). */
async function sums(teamId: string): Promise<Record<string, Sums>> {
  const rollup = "toString(sum(events)) AS n, toString(sumIf(value, currency = 'USD')) AS worth, toString(sum(valued)) AS counted";
  const rows = await testEnv().loaderEvents.query<{ name: string; n: string; worth: string; counted: string }>(
    `SELECT 'events' AS name, toString(count()) AS n, toString(sumIf(toDecimal256(ifNull(value, 0), 18), currency = 'USD')) AS worth,
            toString(countIf(value IS NOT NULL)) AS counted FROM events WHERE team_id = {t:String}
     UNION ALL SELECT 'minutely', ${rollup} FROM spend_minutely WHERE team_id = {t:String}
     UNION ALL SELECT 'hourly', ${rollup} FROM spend_hourly_by WHERE team_id = {t:String} AND dimension = 'outcome'
     UNION ALL SELECT 'daily', ${rollup} FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'outcome'
     UNION ALL SELECT 'daily by asset', ${rollup} FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'asset'`,
    { t: teamId },
  );
  return Object.fromEntries(rows.map((r) => [r.name, { events: r.n, value: r.worth, valued: r.counted }]));
}

describeOnEachRegistry('values of records stored before them', function () {
  this.timeout(120_000);

  it('are set once from the rates of each record\'s time, in events and every rollup, and a second run changes nothing', async () => {
    const team = await newTeam();
    const now = Date.now();
    const t0 = now - 10 * DAY;
    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.1', currency: 'USD', valid_from: new Date(t0 - DAY).toISOString() }).expect(200);
    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.2', currency: 'USD', valid_from: new Date(t0 + 2 * DAY).toISOString() }).expect(200);
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '2000.5', currency: 'USD', valid_from: new Date(t0 + DAY).toISOString() }).expect(200);
    const records = [
      { id: 'usdc', amount: '2.5', asset: 'USDC', created_at: t0 },
      { id: 'eurc-early', amount: '10', asset: 'EURC', created_at: t0 + 3_600_000 },
      { id: 'eurc-late', amount: '10', asset: 'EURC', created_at: t0 + 3 * DAY },
      { id: 'eth-before-rate', amount: '1', asset: 'ETH', created_at: t0 },
      { id: 'eth-rated', amount: '0.333333333333333333', asset: 'ETH', created_at: t0 + 2 * DAY },
      { id: 'free', amount: '0', asset: 'NOPE', created_at: t0 },
      { id: 'unpriced', amount_raw: '5000', asset: 'NOPE', created_at: t0 },
    ];
    const rows = oldRows(team.teamId, records);
    const first = 8e15 + Math.floor(Math.random() * 1e9);
    const { loaderEvents, deps } = testEnv();
    const logId = `backfill-${team.teamId}`;
    await insertBlock(loaderEvents, logId, { firstPos: first, lastPos: first + rows.length - 1 }, { format: 'rowbinary', bytes: Buffer.from(rowBinaryOf(rows, first, 'rowbinary')) });
    const before = await sums(team.teamId);
    for (const s of Object.values(before)) expect(s).to.deep.equal({ events: '7', value: '0', valued: '0' });

    const logger = pino({ level: 'silent' });
    // The rollups at once, events by mutations in the background: done once none is left to value.
    const valueAll = async () => {
      const deadline = Date.now() + 30_000;
      while (!(await backfillValues(loaderEvents, deps.db, logId, logger))) {
        if (Date.now() > deadline) throw new Error('stored records still unvalued after 30 s');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await valueAll();
    const stored = await loaderEvents.query<{ id: string; value: string | null; currency: string; valuation: string }>(
      'SELECT id, toString(value) AS value, toString(currency) AS currency, valuation FROM events WHERE team_id = {t:String} ORDER BY id',
      { t: team.teamId },
    );
    const byId = Object.fromEntries(stored.map((r) => [r.id, r]));
    const ethValue = new BigNumber('0.333333333333333333').times('2000.5').decimalPlaces(18, BigNumber.ROUND_HALF_EVEN).toFixed();
    expect(Object.fromEntries(stored.map((r) => [r.id, r.value]))).to.deep.equal({
      usdc: '2.5',
      'eurc-early': '11',
      'eurc-late': '12',
      'eth-before-rate': null,
      'eth-rated': ethValue,
      free: '0',
      unpriced: null,
    });
    expect(stored.every((r) => r.currency === 'USD')).to.equal(true);
    expect(JSON.parse(byId['eurc-late']!.valuation)).to.deep.equal({
      rate: { asset: 'EURC', value: '1', currency: 'EUR', valid_from: '1970-01-01T00:00:00.000Z', source: 'built-in' },
      conversion: { asset: 'EUR', value: '1.2', currency: 'USD', valid_from: new Date(t0 + 2 * DAY).toISOString(), source: 'team' },
    });
    expect(byId['eth-before-rate']!.valuation).to.equal('');
    const total = new BigNumber('2.5').plus(11).plus(12).plus(ethValue).toFixed();
    const after = await sums(team.teamId);
    for (const [name, s] of Object.entries(after)) expect(s, name).to.deep.equal({ events: '7', value: total, valued: '5' });

    // Again: nothing is left to value, nothing is added twice.
    expect(await backfillValues(loaderEvents, deps.db, logId, logger)).to.equal(true);
    expect((await deps.db.all('SELECT asset FROM value_backfills WHERE team_id = ? ORDER BY asset', [team.teamId])).map((r) => r.asset)).to.deep.equal(['ETH', 'EURC', 'NOPE', 'USDC']);
    expect(await sums(team.teamId)).to.deep.equal(after);
  });
});

forEachDialect('value-backfill', (open, dialect) => {
  it(`waits while chunks or blocks of an older format are still in the log (${dialect})`, async () => {
    const { db } = await open();
    const store = testEnv().loaderEvents;
    const logger = pino({ level: 'silent' });
    const body = Buffer.from(rowBinaryOf(oldRows('team_x', [{ id: 'waiting', amount: '1', asset: 'USDC' }]), 1, 'rowbinary'));
    const chunk =
      dialect === 'postgres'
        ? "INSERT INTO ingest_chunks (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body) VALUES (1, 1, 'team_x', 1, ?, 0, 'tsv', ?)"
        : "INSERT INTO ingest_log (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body) VALUES (1, 1, 'team_x', 1, ?, 0, 'rowbinary', ?)";
    await db.run(chunk, [body.length, body]);
    expect(await backfillValues(store, db, 'wait', logger)).to.equal(false);
    await db.run(dialect === 'postgres' ? 'DELETE FROM ingest_chunks' : 'DELETE FROM ingest_log');
    await db.run(
      dialect === 'postgres' ? "INSERT INTO ingest_blocks (origin, ranges, made_at, format, layout) VALUES (0, '[[1,1]]', 0, 'tsv', 2)" : "INSERT INTO ingest_blocks (first_pos, last_pos, format) VALUES (1, 1, 'tsv')",
    );
    expect(await backfillValues(store, db, 'wait', logger)).to.equal(false);
  });
});
