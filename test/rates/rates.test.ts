/** A team's currency and its rates: set, listed, kept as history, ended; on SQLite and PostgreSQL. */
import { expect } from 'chai';
import { keyWith } from '../helpers/common.js';
import { api, describeOnEachRegistry, errorOf, newTeam, testEnv } from '../helpers/context.js';

type Row = { asset: string; value: string | null; currency: string | null; source: string; value_in_team_currency?: string | null; decimals: number | null; valid_from: string };

describeOnEachRegistry('team currency and rates', function () {
  this.timeout(60_000);

  it('a team values in USD until an admin sets another ISO 4217 currency, which the audit log records', async () => {
    const team = await newTeam();
    expect((await api().get('/api/v1/team').set(...team.auth).expect(200)).body.currency).to.equal('USD');
    const changed = await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    expect(changed.body).to.include({ currency: 'EUR', id: team.teamId });
    // The same again changes nothing and records nothing.
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    const log = await api().get('/api/v1/audit-log?resource_type=team').set(...team.auth).expect(200);
    expect(log.body.data).to.have.length(1);
    expect(log.body.data[0]).to.deep.include({ action: 'team.update', resourceType: 'team', resourceId: team.teamId, changes: { currency: { before: 'USD', after: 'EUR' } } });

    for (const currency of ['ABC', 'XXX', 'eur', 'EURO']) {
      const res = await api().patch('/api/v1/team').set(...team.auth).send({ currency }).expect(400);
      expect((errorOf(res.body).details as { field: string }[]).map((d) => d.field), currency).to.deep.equal(['currency']);
    }
    const reader = await keyWith(team, { scopes: ['read'] });
    await api().patch('/api/v1/team').set('Authorization', `Bearer ${reader.apiKey}`).send({ currency: 'GBP' }).expect(403);
    expect((await api().get('/api/v1/team').set(...team.auth).expect(200)).body.currency).to.equal('EUR');
  });

  it('lists the built-in pegs, and values one unit in the team currency through one more rate', async () => {
    const team = await newTeam();
    const list = async () => (await api().get('/api/v1/rates').set(...team.auth).expect(200)).body as { currency: string; data: Row[] };
    const before = await list();
    expect(before.currency).to.equal('USD');
    const of = (rows: Row[], asset: string) => rows.find((r) => r.asset === asset);
    for (const asset of ['USDC', 'USDT', 'PYUSD', 'USDBC', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913']) {
      expect(of(before.data, asset), asset).to.include({ value: '1', currency: 'USD', source: 'built-in', value_in_team_currency: '1' });
    }
    expect(of(before.data, 'EURC')).to.include({ value: '1', currency: 'EUR', value_in_team_currency: null });

    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.08', currency: 'USD' }).expect(200);
    expect(of((await list()).data, 'EURC')).to.include({ value_in_team_currency: '1.08' });
    expect(of((await list()).data, 'EUR')).to.include({ value: '1.08', currency: 'USD', source: 'team', value_in_team_currency: '1.08' });

    // In EUR, USDC needs a USD rate; the EUR rate converts the other way only.
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    const inEuro = await list();
    expect(of(inEuro.data, 'EURC')).to.include({ value_in_team_currency: '1' });
    expect(of(inEuro.data, 'USDC')).to.include({ value_in_team_currency: null });
    await api().put('/api/v1/rates/USD').set(...team.auth).send({ value: '0.925', currency: 'EUR' }).expect(200);
    expect(of((await list()).data, 'USDC')).to.include({ value_in_team_currency: '0.925' });
  });

  it('keeps every version: a rate from a time on, refused twice at one time, a later one listed when it starts, ended by DELETE', async () => {
    const team = await newTeam();
    const now = Date.now();
    const earlier = new Date(now - 3_600_000).toISOString();
    const later = new Date(now + 3_600_000).toISOString();
    const set = await api().put('/api/v1/rates/eth').set(...team.auth).send({ value: '3050.25', currency: 'USD', valid_from: earlier, decimals: 18 }).expect(200);
    expect(set.body).to.include({ asset: 'ETH', value: '3050.25', currency: 'USD', valid_from: earlier, decimals: 18, source: 'team' });
    const again = await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '1', currency: 'USD', valid_from: earlier }).expect(409);
    expect(errorOf(again.body).details).to.deep.equal([{ field: 'valid_from', message: 'has a version already: versions are never changed' }]);
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3100', currency: 'USD', valid_from: later }).expect(200);

    const listed = (await api().get('/api/v1/rates').set(...team.auth).expect(200)).body.data as Row[];
    expect(listed.find((r) => r.asset === 'ETH')).to.include({ value: '3050.25', value_in_team_currency: '3050.25' });
    const history = (await api().get('/api/v1/rates/Eth').set(...team.auth).expect(200)).body;
    // The later version left decimals out: it keeps those of the version it follows.
    expect(history.data.map((r: Row) => [r.value, r.valid_from, r.decimals])).to.deep.equal([['3100', later, 18], ['3050.25', earlier, 18]]);
    expect(history.next_cursor).to.equal(null);

    const ended = await api().delete('/api/v1/rates/ETH').set(...team.auth).expect(200);
    expect(ended.body).to.include({ asset: 'ETH', value: null, currency: null, source: 'team' });
    expect(((await api().get('/api/v1/rates').set(...team.auth).expect(200)).body.data as Row[]).find((r) => r.asset === 'ETH')).to.equal(undefined);
    expect((await api().get('/api/v1/rates/ETH').set(...team.auth).expect(200)).body.data.map((r: Row) => r.value)).to.deep.equal(['3100', null, '3050.25']);
    await api().delete('/api/v1/rates/ETH').set(...team.auth).expect(404);
    await api().get('/api/v1/rates/WETH').set(...team.auth).expect(404);
    // Set again after its end, without decimals: those given before carry on.
    const again2 = await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3200', currency: 'USD' }).expect(200);
    expect(again2.body).to.include({ decimals: 18 });

    const log = (await api().get('/api/v1/audit-log?resource_type=rate').set(...team.auth).expect(200)).body.data as { action: string }[];
    expect(log.map((e) => e.action)).to.deep.equal(['rate.set', 'rate.end', 'rate.set', 'rate.set']);
  });

  it("a team's rate of a pegged asset wins over the peg until it ends; pages of history end with the peg", async () => {
    const team = await newTeam();
    await api().put('/api/v1/rates/usdc').set(...team.auth).send({ value: '0.98', currency: 'USD', valid_from: new Date(Date.now() - 60_000).toISOString() }).expect(200);
    const usdc = async () => ((await api().get('/api/v1/rates').set(...team.auth).expect(200)).body.data as Row[]).find((r) => r.asset === 'USDC');
    expect(await usdc()).to.include({ value: '0.98', source: 'team', value_in_team_currency: '0.98' });
    const first = (await api().get('/api/v1/rates/USDC?limit=1').set(...team.auth).expect(200)).body;
    expect(first.data.map((r: Row) => r.value)).to.deep.equal(['0.98']);
    const rest = (await api().get(`/api/v1/rates/USDC?limit=1&cursor=${first.next_cursor}`).set(...team.auth).expect(200)).body;
    expect(rest.data.map((r: Row) => [r.value, r.source])).to.deep.equal([['1', 'built-in']]);
    await api().delete('/api/v1/rates/USDC').set(...team.auth).expect(200);
    expect(await usdc()).to.include({ value: '1', source: 'built-in' });
  });

  it('refuses what is no rate, naming the field; only an admin sets one', async () => {
    const team = await newTeam();
    const put = (asset: string, body: object) => api().put(`/api/v1/rates/${asset}`).set(...team.auth).send(body);
    const fieldOf = async (res: Promise<{ status: number; body: unknown }>) => {
      const answered = await res;
      expect(answered.status).to.equal(400);
      return (errorOf(answered.body).details as { field: string }[]).map((d) => d.field);
    };
    expect(await fieldOf(put('ETH', { value: '0', currency: 'USD' }))).to.deep.equal(['value']);
    expect(await fieldOf(put('ETH', { value: '-1', currency: 'USD' }))).to.deep.equal(['value']);
    expect(await fieldOf(put('ETH', { value: '1e3', currency: 'USD' }))).to.deep.equal(['value']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'usd' }))).to.deep.equal(['currency']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'ABC' }))).to.deep.equal(['currency']);
    expect(await fieldOf(put('EUR', { value: '1', currency: 'EUR' }))).to.deep.equal(['currency']);
    expect(await fieldOf(put('EUR', { value: '1.08', currency: 'USD', decimals: 2 }))).to.deep.equal(['decimals']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'USD', valid_from: 'yesterday' }))).to.deep.equal(['valid_from']);
    // A leap second is a date-time the format takes and Date cannot read; years outside what records carry.
    expect(await fieldOf(put('ETH', { value: '1', currency: 'USD', valid_from: '2016-12-31T23:59:60Z' }))).to.deep.equal(['valid_from']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'USD', valid_from: '1969-12-31T23:59:59Z' }))).to.deep.equal(['valid_from']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'USD', valid_from: '9999-12-31T23:59:59-01:00' }))).to.deep.equal(['valid_from']);
    expect(await fieldOf(put('ETH', { value: '1000000000000000', currency: 'USD' }))).to.deep.equal(['value']);
    expect(await fieldOf(api().patch('/api/v1/team').set(...team.auth).send({}))).to.deep.equal(['body']);
    expect(await fieldOf(put('x'.repeat(129), { value: '1', currency: 'USD' }))).to.deep.equal(['asset']);
    expect(await fieldOf(put('ETH', { value: '1', currency: 'USD', extra: true }))).to.deep.equal(['extra']);
    const reader = await keyWith(team, { scopes: ['read'] });
    await api().put('/api/v1/rates/ETH').set('Authorization', `Bearer ${reader.apiKey}`).send({ value: '1', currency: 'USD' }).expect(403);
    await api().get('/api/v1/rates').set('Authorization', `Bearer ${reader.apiKey}`).expect(200);
  });

  it("one team's rates are its own; the history is never rewritten, not even by hand", async () => {
    const a = await newTeam();
    const b = await newTeam();
    await api().put('/api/v1/rates/ETH').set(...a.auth).send({ value: '3000', currency: 'USD' }).expect(200);
    await api().get('/api/v1/rates/ETH').set(...b.auth).expect(404);
    expect(((await api().get('/api/v1/rates').set(...b.auth).expect(200)).body.data as Row[]).map((r) => r.asset)).not.to.include('ETH');
    const { db } = testEnv().deps;
    let refused: unknown;
    await db.run("UPDATE rates SET value = '1' WHERE team_id = ?", [a.teamId]).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/never changed/);
    refused = undefined;
    await db.run('DELETE FROM rates WHERE team_id = ?', [a.teamId]).catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/never (changed or )?removed/);
  });
});
