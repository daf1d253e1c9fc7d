/** Analytics answer values in the team's currency beside spend, from the rollups and the raw edges alike; on SQLite and PostgreSQL. */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import { api, describeOnEachRegistry, loadedEvents, newTeam } from '../helpers/context.js';

const HOUR = 3_600_000;

const record = (id: string, agent: string, amount: string, asset: string, at: number) => ({
  id,
  agent_id: agent,
  endpoint: `https://${agent}.example.com/v1/call`,
  method: 'POST',
  amount,
  asset,
  created_at: at,
});

describeOnEachRegistry('analytics in value', function () {
  this.timeout(60_000);

  it('summary, breakdowns and timeseries carry the value in the team currency and count what is unvalued; equal to the raw values', async () => {
    const team = await newTeam();
    const now = Date.now();
    const start = now - 50 * HOUR;
    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.08', currency: 'USD', valid_from: new Date(start - HOUR).toISOString() }).expect(200);
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3000.123456789', currency: 'USD', valid_from: new Date(start - HOUR).toISOString() }).expect(200);
    // Spread over two days and more: whole days and hours from the rollups, the ends raw.
    const records = Array.from({ length: 60 }, (_, i) => {
      const at = start + i * 49 * 60_000 + 1_234;
      const [amount, asset] = [['1.5', 'USDC'], ['2.25', 'EURC'], ['0.000123456789', 'ETH'], ['7', 'WETH']][i % 4]!;
      return record(`v-${i}`, i % 3 === 0 ? 'alpha' : 'beta', amount!, asset!, at);
    });
    await api().post('/api/v1/events').set(...team.auth).send({ events: records }).expect(200);
    const from = new Date(start - 17 * 60_000).toISOString();
    const to = new Date(now + 60_000).toISOString();

    const events = await loadedEvents(team.teamId);
    const [sums] = await events.query<{ worth: string; without: string; spent: string }>(
      `SELECT toString(sum(toDecimal256(ifNull(value, 0), 18))) AS worth, toString(countIf(value IS NULL)) AS without,
              toString(sum(toDecimal256(amount, 18))) AS spent FROM events WHERE team_id = {t:String}`,
      { t: team.teamId },
    );
    const raw = { value: sums!.worth, unvalued: sums!.without, spend: sums!.spent };
    const exact = new BigNumber(0)
      .plus(new BigNumber('1.5').times(15))
      .plus(new BigNumber('2.25').times('1.08').times(15))
      .plus(new BigNumber('0.000123456789').times('3000.123456789').decimalPlaces(18, BigNumber.ROUND_HALF_EVEN).times(15));
    expect(raw.value).to.equal(exact.toFixed());
    expect(raw.unvalued).to.equal('15');

    const summary = (await api().get('/api/v1/analytics/summary').query({ from, to }).set(...team.auth).expect(200)).body;
    expect(summary).to.include({ currency: 'USD', totalValue: raw.value, unvalued: 15, totalSpend: raw.spend, count: 60 });
    const agents = summary.byAgent as Record<string, { spend: string; value: string; count: number }>;
    expect(BigNumber.sum(...Object.values(agents).map((a) => a.value)).toFixed()).to.equal(raw.value);
    expect(summary.previous).to.include({ totalValue: '0' });

    const byAsset = (await api().get('/api/v1/analytics/by-asset').query({ from, to }).set(...team.auth).expect(200)).body as {
      key: string;
      value: string;
      unvalued: number;
      currency: string;
    }[];
    const asset = Object.fromEntries(byAsset.map((r) => [r.key, r]));
    expect(asset.USDC).to.include({ value: '22.5', unvalued: 0, currency: 'USD' });
    expect(asset.EURC).to.include({ value: '36.45', unvalued: 0 });
    expect(asset.WETH).to.include({ value: '0', unvalued: 15 });

    const series = (await api().get('/api/v1/analytics/timeseries').query({ from, to, granularity: 'hour' }).set(...team.auth).expect(200)).body as { value: string }[];
    expect(BigNumber.sum(...series.map((b) => b.value)).toFixed()).to.equal(raw.value);
  });

  it('after a change of the team currency, values in the new one; the records valued in the old one are counted as unvalued, never added', async () => {
    const team = await newTeam();
    await api().post('/api/v1/events').set(...team.auth).send({ events: [record('usd-1', 'alpha', '4', 'USDC', Date.now() - 60_000)] }).expect(200);
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    await api().post('/api/v1/events').set(...team.auth).send({ events: [record('eur-1', 'alpha', '3', 'EURC', Date.now() - 30_000)] }).expect(200);
    const summary = (await api().get('/api/v1/analytics/summary').set(...team.auth).expect(200)).body;
    expect(summary).to.include({ currency: 'EUR', totalValue: '3', unvalued: 1, totalSpend: '7', count: 2 });
  });
});
