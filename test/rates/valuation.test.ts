/** Every record valued at acknowledgement in its team's currency, from the rates in memory; on SQLite and PostgreSQL. */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import { RateBooks } from '../../src/rates/books.js';
import { RATES_CHANGED } from '../../src/rates/changes.js';
import { openSharedStore } from '../../src/stores/postgres.js';
import { postgresDatabase } from '../../src/stores/sql.js';
import { api, describeOnEachRegistry, loadedEvents, newTeam, testEnv } from '../helpers/context.js';

const HOUR = 3_600_000;
const WETH = '0xc02aaa39b223fe8d0a5e5c4f27ead9083c756cc2';

type Team = Awaited<ReturnType<typeof newTeam>>;

const record = (id: string, fields: Record<string, unknown>) => ({ id, agent_id: 'valued-bot', endpoint: 'https://api.example.com/paid', method: 'POST', ...fields });

async function send(team: Team, events: Record<string, unknown>[]) {
  return (await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200)).body as {
    ingested: number;
    warnings: { index: number; field: string; message: string }[];
  };
}

async function putRate(team: Team, asset: string, body: Record<string, unknown>) {
  await api().put(`/api/v1/rates/${asset}`).set(...team.auth).send(body).expect(200);
}

type Stored = { id: string; amount: string; value: string | null; currency: string; valuation: string };

async function stored(team: Team): Promise<Stored[]> {
  const events = await loadedEvents(team.teamId);
  return events.query<Stored>(
    `SELECT id, toString(amount) AS amount, toString(value) AS value, toString(currency) AS currency, valuation
       FROM events WHERE team_id = {team:String} ORDER BY id`,
    { team: team.teamId },
  );
}

const byId = (rows: Stored[]) => Object.fromEntries(rows.map((r) => [r.id, r]));

describeOnEachRegistry('records valued at acknowledgement', function (dialect) {
  this.timeout(60_000);

  it('values USDC, EURC through an EUR rate and ETH by the team\'s rate; WETH without a rate and an unknown amount_raw are unvalued and said so', async () => {
    const team = await newTeam();
    const at = Date.now() - 60_000;
    await putRate(team, 'EUR', { value: '1.08', currency: 'USD', valid_from: new Date(at - HOUR).toISOString() });
    await putRate(team, 'ETH', { value: '3050.25', currency: 'USD', valid_from: new Date(at - HOUR).toISOString(), decimals: 18 });
    const answer = await send(team, [
      record('a-usdc', { amount: '12.5', asset: 'USDC', created_at: at }),
      record('b-eurc', { amount: '10', asset: 'EURC', created_at: at }),
      record('c-eth', { amount: '0.5', asset: 'ETH', created_at: at }),
      record('d-eth-raw', { amount_raw: '250000000000000000', asset: 'eth', created_at: at }),
      record('e-weth', { amount: '0.25', asset: WETH, created_at: at }),
      record('f-raw-unknown', { amount_raw: '1000', asset: 'MYSTERY', created_at: at }),
      record('g-free', { amount: '0', asset: 'MYSTERY', created_at: at }),
      record('h-usd-address', { amount: '0.000001', asset: '0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913', created_at: at }),
    ]);
    expect(answer.ingested).to.equal(8);
    expect(answer.warnings.map((w) => [w.index, w.field])).to.deep.equal([
      [4, 'asset'],
      [5, 'amount_raw'],
    ]);
    expect(answer.warnings[0]!.message).to.contain(`"${WETH}" has no rate into USD`).and.contain('stored unvalued');
    expect(answer.warnings[1]!.message).to.contain('stored unvalued');
    const rows = byId(await stored(team));
    expect(rows['a-usdc']).to.deep.include({ value: '12.5', currency: 'USD' });
    expect(rows['b-eurc']).to.deep.include({ value: '10.8', currency: 'USD' });
    expect(rows['c-eth']).to.deep.include({ value: '1525.125', currency: 'USD' });
    // amount_raw in ETH: the decimals the team's rate gives make it an amount, then a value.
    expect(rows['d-eth-raw']).to.deep.include({ amount: '0.25', value: '762.5625' });
    expect(rows['e-weth']).to.deep.include({ value: null, currency: 'USD', valuation: '' });
    expect(rows['f-raw-unknown']).to.deep.include({ amount: '0', value: null, valuation: '' });
    expect(rows['g-free']).to.deep.include({ value: '0', valuation: '' });
    expect(rows['h-usd-address']).to.deep.include({ value: '0.000001' });
    // The rate used is kept beside the value, the conversion too.
    expect(JSON.parse(rows['b-eurc']!.valuation)).to.deep.equal({
      rate: { asset: 'EURC', value: '1', currency: 'EUR', valid_from: '1970-01-01T00:00:00.000Z', source: 'built-in' },
      conversion: { asset: 'EUR', value: '1.08', currency: 'USD', valid_from: new Date(at - HOUR).toISOString(), source: 'team' },
    });
    expect(JSON.parse(rows['c-eth']!.valuation).rate).to.deep.include({ asset: 'ETH', value: '3050.25', source: 'team' });
  });

  it('a rate changed mid-day values the records after its valid_from at the new rate, and leaves the ones before', async () => {
    const team = await newTeam();
    const now = Date.now();
    await putRate(team, 'ETH', { value: '3000', currency: 'USD', valid_from: new Date(now - 5 * HOUR).toISOString() });
    const first = await send(team, [record('before-1', { amount: '1', asset: 'ETH', created_at: now - 3 * HOUR })]);
    expect(first.warnings).to.deep.equal([]);
    // The change: from two hours ago, pushed after the first record was stored.
    await putRate(team, 'ETH', { value: '3100.5', currency: 'USD', valid_from: new Date(now - 2 * HOUR).toISOString() });
    await send(team, [
      record('before-2', { amount: '1', asset: 'ETH', created_at: now - 3 * HOUR }),
      record('after-1', { amount: '2', asset: 'ETH', created_at: now - HOUR }),
    ]);
    const rows = byId(await stored(team));
    expect(rows['before-1']!.value).to.equal('3000');
    expect(rows['before-2']!.value).to.equal('3000');
    expect(rows['after-1']!.value).to.equal('6201');
    // Ended: records from then on are unvalued (ETH has no peg); the ones before keep their value.
    await api().delete('/api/v1/rates/ETH').set(...team.auth).expect(200);
    const ended = await send(team, [record('after-end', { amount: '1', asset: 'ETH' })]);
    expect(ended.warnings.map((w) => w.field)).to.deep.equal(['asset']);
    expect(byId(await stored(team))['after-1']!.value).to.equal('6201');
  });

  it('a team in EUR values in EUR from the change on; records stored before keep their USD values', async () => {
    const team = await newTeam();
    await send(team, [record('usd-1', { amount: '5', asset: 'USDC' })]);
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    await putRate(team, 'USD', { value: '0.925', currency: 'EUR', valid_from: new Date(Date.now() - HOUR).toISOString() });
    const answer = await send(team, [record('eur-1', { amount: '5', asset: 'USDC' }), record('eur-2', { amount: '3', asset: 'EURC' })]);
    expect(answer.warnings).to.deep.equal([]);
    const rows = byId(await stored(team));
    expect(rows['usd-1']).to.deep.include({ value: '5', currency: 'USD' });
    expect(rows['eur-1']).to.deep.include({ value: '4.625', currency: 'EUR' });
    expect(rows['eur-2']).to.deep.include({ value: '3', currency: 'EUR' });
  });

  it('a record from before the rates held in memory is valued by the rate of its time, read from the store', async () => {
    const team = await newTeam();
    const now = Date.now();
    await putRate(team, 'SOL', { value: '150', currency: 'USD', valid_from: new Date(now - 72 * HOUR).toISOString() });
    await putRate(team, 'SOL', { value: '170', currency: 'USD', valid_from: new Date(now - 24 * HOUR).toISOString() });
    await putRate(team, 'SOL', { value: '180', currency: 'USD', valid_from: new Date(now - HOUR).toISOString() });
    await send(team, [
      record('sol-old', { amount: '2', asset: 'SOL', created_at: now - 48 * HOUR }),
      record('sol-day', { amount: '2', asset: 'SOL', created_at: now - 12 * HOUR }),
      record('sol-now', { amount: '2', asset: 'SOL' }),
      record('sol-before-any', { amount: '2', asset: 'SOL', created_at: now - 96 * HOUR }),
    ]);
    const rows = byId(await stored(team));
    expect([rows['sol-old']!.value, rows['sol-day']!.value, rows['sol-now']!.value, rows['sol-before-any']!.value]).to.deep.equal(['300', '340', '360', null]);
  });

  it('values exactly: half-even at 18 places, once for the whole product', async () => {
    const team = await newTeam();
    await putRate(team, 'GBP', { value: '1.2700000000000001', currency: 'USD', valid_from: new Date(Date.now() - HOUR).toISOString() });
    await putRate(team, 'TOK', { value: '0.333333333333333333', currency: 'GBP', valid_from: new Date(Date.now() - HOUR).toISOString() });
    const amounts = ['1', '0.000000000000000001', '123456.789', '99999999.999999999999999999'];
    await send(team, amounts.map((amount, i) => record(`tok-${i}`, { amount, asset: 'TOK' })));
    const rows = byId(await stored(team));
    amounts.forEach((amount, i) => {
      const exact = new BigNumber(amount).times('1.2700000000000001').times('0.333333333333333333');
      expect(rows[`tok-${i}`]!.value, amount).to.equal(exact.decimalPlaces(18, BigNumber.ROUND_HALF_EVEN).toFixed());
    });
  });

  it('a change that commits while a book is being read applies to it once read, once', async () => {
    const team = await newTeam();
    const { db } = testEnv().deps;
    const books = new RateBooks(db);
    try {
      const reading = books.book(team.teamId);
      const version = { asset: 'ETH', value: '5', currency: 'USD', validFrom: Date.now() - 1_000, decimals: null };
      db.signals.emit(RATES_CHANGED, JSON.stringify({ team: team.teamId, revision: 1, version }));
      const book = await reading;
      expect(book.histories.get('ETH')).to.have.length(1);
      expect(book.histories.get('ETH')![0]).to.include({ value: '5', currency: 'USD' });
      // Once read, a change with the next revision applies at once; one skipped drops the book (read again when used).
      db.signals.emit(RATES_CHANGED, JSON.stringify({ team: team.teamId, revision: 2, currency: 'EUR' }));
      expect((await books.book(team.teamId)).currency).to.equal('EUR');
      db.signals.emit(RATES_CHANGED, JSON.stringify({ team: team.teamId, revision: 4, currency: 'GBP' }));
      expect((await books.book(team.teamId)).currency).to.equal('USD');
    } finally {
      await books.close();
    }
  });

  // Another instance in this process: a pool and books of its own on the same database.
  if (dialect === 'postgres') {
    it('another instance applies a change as its NOTIFY arrives, and reads again a book whose change it missed', async () => {
      const pool = openSharedStore(testEnv().config.database!.url);
      const other = new RateBooks(postgresDatabase(pool), { pool, checkMs: 100 });
      other.start();
      try {
        const team = await newTeam();
        expect((await other.book(team.teamId)).currency).to.equal('USD');
        await putRate(team, 'ETH', { value: '3000', currency: 'USD', valid_from: new Date(Date.now() - HOUR).toISOString() });
        await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
        const until = async (done: (book: Awaited<ReturnType<typeof other.book>>) => boolean) => {
          const deadline = Date.now() + 5_000;
          let book = await other.book(team.teamId);
          while (!done(book) && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 20));
            book = await other.book(team.teamId);
          }
          return book;
        };
        const book = await until((b) => b.currency === 'EUR' && b.histories.has('ETH'));
        expect(book.currency).to.equal('EUR');
        expect(book.histories.get('ETH')?.[0]).to.include({ value: '3000', currency: 'USD' });
        // A change whose NOTIFY never came (written by hand): the revision check reads the book again.
        const { db } = testEnv().deps;
        await db.run('INSERT INTO rates (team_id, asset, valid_from, value, currency, decimals, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
          team.teamId, 'ETH', Date.now() - 60_000, '3200', 'USD', null, Date.now(),
        ]);
        await db.run('UPDATE teams SET rates_revision = rates_revision + 1 WHERE id = ?', [team.teamId]);
        expect((await until((b) => b.histories.get('ETH')?.[0]?.value === '3200')).histories.get('ETH')?.[0]).to.include({ value: '3200' });
      } finally {
        await other.close();
        await pool.end();
      }
    });
  }
});
