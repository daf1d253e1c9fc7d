/**
 * The embedded store sends its read settings (Decimals and 64-bit integers quoted in JSON) with its
 * first queries only: the engine's session keeps them. Every query must still see them, the first
 * ones sent at once included, or money would reach JS as a number. (Their third, times read
 * best-effort, is the embedded engine's default already.)
 */
import { expect } from 'chai';
import { createEventStore, type EventStore } from '../../src/stores/clickhouse.js';
import { testEnv } from '../helpers/context.js';

describe('event store session settings', function () {
  this.timeout(60_000);
  let store: EventStore;
  // A session of its own on the shared engine: no query has run on it yet.
  before(() => {
    store = createEventStore(testEnv().config.clickhouse);
  });
  after(async () => {
    await store.close();
  });

  type Row = { amount: unknown; big: unknown };
  const sql = `SELECT toDecimal128('12345678901234567.123456789012345678', 18) AS amount, toUInt64('18446744073709551615') AS big`;
  const expected: Row = { amount: '12345678901234567.123456789012345678', big: '18446744073709551615' };

  it('quotes money and 64-bit integers in the first queries, sent at once, and in every later one', async () => {
    const first = await Promise.all([store.query<Row>(sql), store.query<Row>(sql), store.query<Row>(sql)]);
    for (const rows of first) expect(rows).to.deep.equal([expected]);
    await store.command('SELECT 1');
    for (let i = 0; i < 3; i++) expect(await store.query<Row>(sql)).to.deep.equal([expected]);
  });
});
