/**
 * Event rows as RowBinary (src/ingest/rowbinary.ts), the format of the ingest log: the engine must
 * store exactly what it stores from the row's TSV line (and the values TSV never had), for any row the service can
 * make, and the rows of a body must be found again (start, team, id) as the loader finds lines.
 */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import type { EventRow } from '../../src/ingest/records.js';
import { refusedForData } from '../../src/ingest/blocks.js';
import { rowBinaryBoundaries, RowBinaryWriter, VALUE_COLUMNS, type RowBinaryLayout } from '../../src/ingest/rowbinary.js';
import { rowToTsv, TSV_COLUMNS } from '../../src/ingest/tsv.js';
import { testEnv } from '../helpers/context.js';

const FIRST = Date.UTC(2000, 0, 1);
const LAST = Date.UTC(2299, 11, 31, 23, 59, 59, 999);

// Text as records bring it: ASCII, 2-, 3- and 4-byte UTF-8, and what TSV escapes (RowBinary escapes
// nothing); lengths around the varint's steps (127/128 bytes, 16,383/16,384).
const piece = fc.constantFrom('a', 'Zz', '0x1F', 'é', '€', '😀', ' ', '\t', '\n', '\r', '\\', "'", '"', '[', ',', '\u2028');
const short = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));
const long = fc.constantFrom(127, 128, 129, 200, 16_383, 16_384, 20_000).chain((n) => fc.constantFrom('x', 'é', '😀').map((c) => c.repeat(Math.ceil(n / Buffer.byteLength(c)))));
const text = fc.oneof({ weight: 8, arbitrary: short }, { weight: 1, arbitrary: long });
const optional = fc.option(text, { nil: null });
const digits = (min: number, max: number) => fc.array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max }).map((d) => d.join(''));
const amount = fc.oneof(
  digits(1, 20).map((whole) => whole.replace(/^0+(?=\d)/, '')),
  fc.tuple(digits(1, 20), digits(1, 18)).map(([whole, fraction]) => `${whole.replace(/^0+(?=\d)/, '')}.${fraction}`),
  fc.constant('99999999999999999999.999999999999999999'),
);
const time = fc.integer({ min: FIRST, max: LAST });

const row: fc.Arbitrary<EventRow> = fc.record({
  team_id: text,
  event_time: time,
  id: text,
  agent_id: text,
  endpoint: text,
  domain: text,
  method: fc.constantFrom('GET', 'POST', 'PUT'),
  category: text,
  amount,
  amount_text: text,
  amount_raw: text,
  asset: text,
  network: text,
  scheme: text,
  policy_evaluation: fc.constantFrom('allowed', 'flagged', 'blocked'),
  team_label: optional,
  tx_hash: optional,
  payer_address: text,
  payee_address: text,
  facilitator: optional,
  status_code: fc.integer({ min: 0, max: 999 }),
  response_time_ms: fc.integer({ min: 0, max: 4_294_967_295 }),
  human_sponsor: optional,
  policy_id: optional,
  budget_remaining: optional,
  task_id: optional,
  session_id: optional,
  tags: fc.array(text, { maxLength: 130 }),
  metadata: text,
  settled_at: fc.option(time, { nil: null }),
  received_at: time,
  source: fc.constantFrom('events' as const, 'sdk' as const),
  record_extra: text,
  ingest_seq: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  value: fc.option(amount, { nil: null }),
  currency: fc.constantFrom('USD', 'EUR', ''),
  valuation: text,
});

const encodeIn = (rows: readonly EventRow[], firstPos: number, layout: RowBinaryLayout) => encode(rows, firstPos, layout);

function encode(rows: readonly EventRow[], firstPos: number, layout: RowBinaryLayout = 'rowbinary2'): Buffer {
  const writer = new RowBinaryWriter(256, layout);
  rows.forEach((r, i) => writer.write(r, firstPos + i));
  return Buffer.from(writer.rows);
}

describe('the ingest log as RowBinary', () => {
  it('an insert removes the block files a process that died mid-insert left', async () => {
    const { loaderEvents, config } = testEnv();
    // The engine locks its folder to one process: a file here is from a process that is gone.
    const folder = `${(config.clickhouse as { path: string }).path}-blocks`;
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, 'block-1-0.bin'), 'left by a crash');
    await loaderEvents.command('CREATE TABLE rowbinary_first AS events ENGINE = Memory');
    try {
      await loaderEvents.insertRowBinary('rowbinary_first', TSV_COLUMNS, encode(fc.sample(row, { numRuns: 3, seed: 1 }), 1, 'rowbinary'), {});
      expect(fs.readdirSync(folder)).to.deep.equal([]);
      const [stored] = await loaderEvents.query<{ n: string }>('SELECT toString(count()) AS n FROM rowbinary_first');
      expect(stored!.n).to.equal('3');
    } finally {
      await loaderEvents.command('DROP TABLE IF EXISTS rowbinary_first');
    }
  });

  it('finds every row of a body again, in either layout: where it starts, its team, its id and position; a body cut inside a row is refused', () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 8 }), fc.constantFrom<RowBinaryLayout>('rowbinary', 'rowbinary2'), (rows, layout) => {
        const encode = (some: readonly EventRow[], firstPos: number) => encodeIn(some, firstPos, layout);
        const body = encode(rows, 1);
        const found = rowBinaryBoundaries(body, layout);
        expect(found.teamIds).to.deep.equal(rows.map((r) => r.team_id));
        expect(found.ids).to.deep.equal(rows.map((r) => r.id));
        expect(found.positions).to.deep.equal(rows.map((_, i) => 1 + i));
        expect(found.starts).to.have.length(rows.length + 1);
        expect(found.starts.at(-1)).to.equal(body.length);
        // Each row's bytes are that row written alone.
        rows.forEach((r, i) => expect(body.subarray(found.starts[i], found.starts[i + 1]).equals(encode([r], 1 + i))).to.equal(true));
        expect(() => rowBinaryBoundaries(body.subarray(0, body.length - 1), layout)).to.throw(/ends inside a row/);
      }),
      { numRuns: 150 },
    );
  });

  it('stores in ClickHouse exactly what the TSV lines store, column by column, for rows of every shape', async function () {
    this.timeout(120_000);
    const { loaderEvents } = testEnv();
    const rows = fc.sample(row, { numRuns: 400, seed: 33 });
    // Rows as the service makes them too: an SDK record with no optional field set.
    rows.push({ ...rows[0]!, team_label: null, tx_hash: null, facilitator: null, tags: [], settled_at: null, amount: '0', record_extra: '' });
    const tsv = Buffer.from(rows.map((r, i) => rowToTsv(r, 1 + i)).join(''));
    const columns = TSV_COLUMNS.join(', ');
    try {
      await loaderEvents.command('CREATE TABLE rowbinary_from_tsv AS events ENGINE = Memory');
      await loaderEvents.command('CREATE TABLE rowbinary_from_binary AS events ENGINE = Memory');
      await loaderEvents.insertTsv('rowbinary_from_tsv', TSV_COLUMNS, tsv, {});
      await loaderEvents.insertRowBinary('rowbinary_from_binary', [...TSV_COLUMNS, ...VALUE_COLUMNS], encode(rows, 1), {});
      const [counts] = await loaderEvents.query<{ tsv: string; binary: string; onlyTsv: string; onlyBinary: string }>(
        `SELECT (SELECT count() FROM rowbinary_from_tsv) AS tsv, (SELECT count() FROM rowbinary_from_binary) AS binary,
                (SELECT count() FROM (SELECT ${columns} FROM rowbinary_from_tsv EXCEPT SELECT ${columns} FROM rowbinary_from_binary)) AS onlyTsv,
                (SELECT count() FROM (SELECT ${columns} FROM rowbinary_from_binary EXCEPT SELECT ${columns} FROM rowbinary_from_tsv)) AS onlyBinary`,
      );
      expect(counts).to.deep.equal({ tsv: String(rows.length), binary: String(rows.length), onlyTsv: '0', onlyBinary: '0' });
      // And as the rows were: the largest amount, a long text, the positions.
      const [read] = await loaderEvents.query<{ maxAmount: string; longest: string; positions: string }>(
        `SELECT toString(max(amount)) AS maxAmount, toString(max(length(metadata))) AS longest, toString(sum(log_pos)) AS positions FROM rowbinary_from_binary`,
      );
      const largest = BigNumber.max(...rows.map((r) => r.amount));
      expect(new BigNumber(read!.maxAmount).eq(largest), `${read!.maxAmount} against ${largest.toFixed()}`).to.equal(true);
      expect(read!.longest).to.equal(String(Math.max(...rows.map((r) => Buffer.byteLength(r.metadata)))));
      expect(read!.positions).to.equal(String((rows.length * (rows.length + 1)) / 2));
      // The value columns, which TSV lines never had.
      const [values] = await loaderEvents.query<{ total: string; unvalued: string; currencies: string; valuations: string }>(
        `SELECT toString(sum(toDecimal256(ifNull(value, 0), 18))) AS total, toString(countIf(value IS NULL)) AS unvalued,
                toString(sum(length(currency))) AS currencies, toString(sum(length(valuation))) AS valuations FROM rowbinary_from_binary`,
      );
      const valued = rows.filter((r) => r.value !== null);
      expect(new BigNumber(values!.total).eq(BigNumber.sum(0, ...valued.map((r) => r.value!))), values!.total).to.equal(true);
      expect(values).to.deep.include({
        unvalued: String(rows.length - valued.length),
        currencies: String(rows.reduce((n, r) => n + r.currency.length, 0)),
        valuations: String(rows.reduce((n, r) => n + Buffer.byteLength(r.valuation), 0)),
      });
    } finally {
      await loaderEvents.command('DROP TABLE IF EXISTS rowbinary_from_tsv');
      await loaderEvents.command('DROP TABLE IF EXISTS rowbinary_from_binary');
    }
  });

  it('a block inserted twice with one token is stored once; a cut block is refused as data, as a bad TSV line is; no file stays behind', async () => {
    const { loaderEvents, config } = testEnv();
    const folder = `${(config.clickhouse as { path: string }).path}-blocks`;
    const rows = fc.sample(row, { numRuns: 20, seed: 7 }).map((r) => ({ ...r, event_time: Date.UTC(2026, 10, 29, 12) }));
    const body = encode(rows, 1);
    try {
      await loaderEvents.command('CREATE TABLE rowbinary_tokens AS events ENGINE = MergeTree ORDER BY tuple() SETTINGS non_replicated_deduplication_window = 100');
      const columns = [...TSV_COLUMNS, ...VALUE_COLUMNS];
      for (let i = 0; i < 2; i++) await loaderEvents.insertRowBinary('rowbinary_tokens', columns, body, { insert_deduplication_token: "log-1:1-20:events 'quoted'" });
      await loaderEvents.insertRowBinary('rowbinary_tokens', columns, body, { insert_deduplication_token: 'log-1:21-40:events' });
      const [stored] = await loaderEvents.query<{ n: string }>('SELECT toString(count()) AS n FROM rowbinary_tokens');
      expect(stored!.n).to.equal('40');
      const refused = await loaderEvents.insertRowBinary('rowbinary_tokens', columns, body.subarray(0, body.length - 3), {}).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused, 'a cut block must fail').to.be.instanceOf(Error);
      expect(refusedForData(refused), String(refused)).to.equal(true);
      expect(fs.readdirSync(folder)).to.deep.equal([]);
    } finally {
      await loaderEvents.command('DROP TABLE IF EXISTS rowbinary_tokens');
    }
  });
});
