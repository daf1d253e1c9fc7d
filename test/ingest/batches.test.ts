/**
 * What the SDK may send that it must not lose: batches of its user's chosen size, and amounts in
 * assets whose decimals the service does not know (stored and counted as unpriced, never as a
 * silent 0 spend).
 */
import { expect } from 'chai';
import { api, newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { event, sdkRecord, storedCount, storedRows } from './fixtures.js';

describeOnEachRegistry('ingest batch sizes', function () {
  this.timeout(60_000);

  it('POST /audit/batch stores 1,000 SDK records in one batch under the default MAX_BODY_BYTES', async () => {
    expect(testEnv().config.maxBodyBytes, 'the test runs with the default').to.equal(8 * 1024 * 1024);
    const team = await newTeam();
    // Records as the SDK builds them, with some metadata: about 1 KB each.
    const records = Array.from({ length: 1000 }, (_, i) => sdkRecord({ endpoint: `https://api.example.com/v1/item/${i}`, metadata: { purpose: 'x'.repeat(200), i } }));
    const body = JSON.stringify({ records });
    expect(body.length).to.be.above(700_000);
    const res = await api().post('/api/v1/audit/batch').set(...team.auth).set('Content-Type', 'application/json').send(body).expect(200);
    expect(res.body).to.include({ ingested: 1000, duplicates: 0 });
    expect(await storedCount(team.teamId)).to.equal(1000);
  });

  it('POST /audit/batch with no records stores nothing and answers 200 (not an error that drops SDK data)', async () => {
    const team = await newTeam();
    const res = await api().post('/api/v1/audit/batch').set(...team.auth).send({ records: [] }).expect(200);
    expect(res.body).to.deep.equal({ ingested: 0, duplicates: 0, conflicts: 0, errors: [], warnings: [], alerts_created: 0 });
  });

  it('POST /events keeps its 1 to 100 events', async () => {
    const team = await newTeam();
    await api().post('/api/v1/events').set(...team.auth).send({ events: Array.from({ length: 101 }, () => event()) }).expect(400);
    await api().post('/api/v1/events').set(...team.auth).send({ events: [] }).expect(400);
  });
});

describeOnEachRegistry('amounts in assets of unknown decimals', () => {
  it('are stored, warned about, and counted as unpriced in the analytics summary, not as spend', async () => {
    const team = await newTeam();
    const now = Date.now();
    const records = [
      event({ id: 'weth', amount_raw: '1500000000000000', asset: 'WETH', created_at: now - 1000 }),
      event({ id: 'no-asset', amount_raw: '42', created_at: now - 1000 }),
      event({ id: 'zero-raw', amount_raw: '0', asset: 'WETH', created_at: now - 1000 }), // 0 is 0 in any asset
      event({ id: 'priced', amount: '0.25', amount_raw: '7', asset: 'WETH', created_at: now - 1000 }), // amount given: priced
    ].map((r) => {
      if (r.id !== 'priced') delete r.amount;
      if (r.id === 'no-asset') delete r.asset;
      return r;
    });
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: records }).expect(200);
    expect(res.body.ingested).to.equal(4);
    expect(res.body.warnings.map((w: { index: number; field: string }) => [w.index, w.field])).to.deep.equal([
      [0, 'amount_raw'],
      [1, 'amount_raw'],
      [3, 'asset'], // priced, but WETH has no rate: unvalued
    ]);
    expect(res.body.warnings[0].message).to.include('WETH').and.include('ASSET_DECIMALS');
    const from = new Date(now - 3_600_000).toISOString();
    const to = new Date(now + 60_000).toISOString();
    const summary = (await api().get('/api/v1/analytics/summary').query({ from, to }).set(...team.auth).expect(200)).body;
    expect(summary.count).to.equal(4);
    expect(summary.totalSpend).to.equal('0.25');
    expect(summary.unpriced).to.equal(2);
    const read = (await api().get('/api/v1/audit/weth').set(...team.auth).expect(200)).body;
    expect(read).to.include({ amount: '0', amount_raw: '1500000000000000', asset: 'WETH' });
  });

  it('ASSET_DECIMALS prices an asset the built-in table does not know (the test run sets ETH:18,WBTC:8)', async () => {
    const team = await newTeam();
    const records = [event({ id: 'eth', amount_raw: '1500000000000000', asset: 'eth' }), event({ id: 'btc', amount_raw: '250000000', asset: 'WBTC' })];
    for (const r of records) delete r.amount;
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: records }).expect(200);
    // Priced, not valued: neither has a rate.
    expect(res.body.warnings.map((w: { field: string; message: string }) => [w.field, w.message.includes('has no rate')])).to.deep.equal([
      ['asset', true],
      ['asset', true],
    ]);
    const rows = await storedRows(team.teamId);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.amount]))).to.deep.equal({ eth: '0.0015', btc: '2.5' });
  });

  it('an amount_raw too large for its asset\'s decimals is refused, naming it (it could not be stored)', async () => {
    const team = await newTeam();
    const record = event({ amount_raw: '9'.repeat(38), asset: 'USDC' });
    delete record.amount;
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [record, event()] }).expect(200);
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['amount_raw']);
  });
});
