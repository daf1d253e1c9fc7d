/** Policies in value: limits of money in the team's currency across assets, and nothing that slips past them; on SQLite and PostgreSQL. */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import { newPolicy } from '../helpers/common.js';
import { api, describeOnEachRegistry, loadedEvents, newTeam, testEnv } from '../helpers/context.js';

type Team = Awaited<ReturnType<typeof newTeam>>;
const HOUR = 3_600_000;
const WETH = '0xc02aaa39b223fe8d0a5e5c4f27ead9083c756cc2';

const pay = (id: string, amount: string, asset: string, extra: Record<string, unknown> = {}) => ({
  id,
  agent_id: 'research-bot',
  endpoint: 'https://api.example.com/v1/search',
  method: 'GET',
  amount,
  asset,
  ...extra,
});

async function send(team: Team, events: Record<string, unknown>[]) {
  return (await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200)).body as { alerts_created: number; warnings: { field: string }[] };
}

async function alerts(team: Team) {
  return (await api().get('/api/v1/alerts').query({ limit: 100 }).set(...team.auth).expect(200)).body.data as { kind: string; policyId: string | null; observed: string | null; limit: string | null; subject: string | null }[];
}

describeOnEachRegistry('policies in value', function () {
  this.timeout(60_000);

  it('a day budget of 100 USD is crossed by USDC, EURC through an EUR rate and ETH together; /budgets equals an exact recomputation', async () => {
    const team = await newTeam();
    const since = new Date(Date.now() - 24 * HOUR).toISOString();
    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.08', currency: 'USD', valid_from: since }).expect(200);
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3000.5', currency: 'USD', valid_from: since, decimals: 18 }).expect(200);
    const policy = await newPolicy(team, { name: 'research 100 a day', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '100' }], action: 'block' });
    expect(policy.currency).to.equal('USD');
    // 40 USDC + 25 EURC (27 USD) + 0.01 ETH (30.005 USD) = 97.005 USD: under.
    expect((await send(team, [pay('v-1', '40', 'USDC'), pay('v-2', '25', 'EURC'), pay('v-3', '0.01', 'ETH')])).alerts_created).to.equal(0);
    // An amount_raw in ETH, its decimals from the rate: 0.001 ETH = 3.0005 USD, 100.0055: over.
    const crossing = await send(team, [{ ...pay('v-4', '0', 'ETH'), amount: undefined, amount_raw: '1000000000000000' }]);
    expect(crossing.alerts_created).to.equal(1);
    const breach = (await alerts(team)).find((a) => a.policyId === policy.id)!;
    expect(breach).to.include({ kind: 'daily', limit: '100', observed: '100.0055' });
    const budgets = (await api().get('/api/v1/budgets').query({ policy_id: policy.id }).set(...team.auth).expect(200)).body.data as { spent: string; currency: string; remaining: string }[];
    const exact = new BigNumber(40).plus(new BigNumber(25).times('1.08')).plus(new BigNumber('0.01').times('3000.5')).plus(new BigNumber('0.001').times('3000.5'));
    expect(budgets[0]).to.include({ currency: 'USD', spent: exact.toFixed() });
    // Each record's value and the rate it used, beside the SDK's records (which keep their shape).
    const values = (await api().post('/api/v1/records/values').set(...team.auth).send({ ids: ['v-2', 'v-4', 'nope'] }).expect(200)).body.data;
    expect(values).to.deep.equal([
      {
        id: 'v-2',
        value: '27',
        currency: 'USD',
        valuation: {
          rate: { asset: 'EURC', value: '1', currency: 'EUR', valid_from: '1970-01-01T00:00:00.000Z', source: 'built-in' },
          conversion: { asset: 'EUR', value: '1.08', currency: 'USD', valid_from: since, source: 'team' },
        },
      },
      { id: 'v-4', value: '3.0005', currency: 'USD', valuation: { rate: { asset: 'ETH', value: '3000.5', currency: 'USD', valid_from: since, source: 'team' } } },
    ]);
  });

  it('an authorization in WETH without a rate is declined by a block policy in value, naming the asset; pending under approve', async () => {
    const team = await newTeam();
    await newPolicy(team, { name: 'cap', agents: ['research-bot'], limits: [{ kind: 'per_call', amount: '50' }], action: 'block' });
    const ask = (asset: string | undefined, amount = '0.01') => ({ agent_id: 'research-bot', endpoint: 'https://api.example.com/v1/search', amount, ...(asset ? { asset } : {}) });
    const declined = (await api().post('/api/v1/authorizations').set(...team.auth).send(ask(WETH)).expect(200)).body;
    expect(declined.decision).to.equal('declined');
    expect(declined.reasons.join(' ')).to.include(`asset ${WETH} has no rate into USD`);
    expect((await api().post('/api/v1/authorizations').set(...team.auth).send(ask(undefined)).expect(200)).body.decision).to.equal('declined');
    expect((await api().post('/api/v1/authorizations').set(...team.auth).send(ask('USDC', '49')).expect(200)).body.decision).to.equal('approved');
    expect((await api().post('/api/v1/authorizations').set(...team.auth).send(ask('USDC', '51')).expect(200)).body.decision).to.equal('declined');
    const other = await newTeam();
    await newPolicy(other, { name: 'ask', agents: ['research-bot'], limits: [{ kind: 'per_call', amount: '50' }], action: 'approve' });
    expect((await api().post('/api/v1/authorizations').set(...other.auth).send(ask(WETH)).expect(200)).body.decision).to.equal('pending');
  });

  it('an amount_raw in an unknown asset is unvalued and raises an unvalued violation once per agent, asset and day, never 0 unseen', async () => {
    const team = await newTeam();
    const policy = await newPolicy(team, { name: 'research 100 a day', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '100' }], action: 'block' });
    const raw = (id: string) => ({ ...pay(id, '0', 'MYSTERY'), amount: undefined, amount_raw: '123456789' });
    const first = await send(team, [raw('u-1'), raw('u-2')]);
    expect(first.alerts_created).to.equal(1);
    await send(team, [raw('u-3')]);
    const unvalued = (await alerts(team)).filter((a) => a.kind === 'unvalued');
    expect(unvalued).to.have.length(1);
    expect(unvalued[0]).to.include({ policyId: policy.id, subject: 'MYSTERY' });
    const values = (await api().post('/api/v1/records/values').set(...team.auth).send({ ids: ['u-1'] }).expect(200)).body.data;
    expect(values).to.deep.equal([{ id: 'u-1', value: null, currency: 'USD', valuation: null }]);
    const tooMany = await api().post('/api/v1/records/values').set(...team.auth).send({ ids: Array.from({ length: 501 }, (_, i) => `x-${i}`) }).expect(400);
    expect(tooMany.body.error.details[0]).to.include({ field: 'ids' });
  });

  it('a policy of one asset without a currency keeps counting amounts of that asset; null is refused for several assets', async () => {
    const team = await newTeam();
    const usdc = await newPolicy(team, { name: 'usdc only', limits: [{ kind: 'daily', amount: '10' }], match: { assets: ['USDC'] } });
    expect(usdc.currency).to.equal(null);
    const bad = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [{ kind: 'daily', amount: '1' }], currency: null }).expect(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).to.deep.equal(['currency']);
    await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [{ kind: 'daily', amount: '1' }], currency: 'EURO' }).expect(400);
    expect((await send(team, [pay('a-1', '6', 'USDC'), pay('a-2', '6', 'USDC')])).alerts_created).to.equal(1);
  });

  it('a rate change mid-day values later records at the new rate and leaves the earlier ones', async () => {
    const team = await newTeam();
    const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * HOUR).toISOString();
    // Two hours ago (or since midnight, if the day is younger): both records fall in one UTC day.
    const midnight = new Date(new Date().toISOString().slice(0, 10)).getTime();
    const earlier = Math.max(Date.now() - 2 * HOUR, midnight + 1_000);
    const change = new Date(earlier + (Date.now() - earlier) / 2).toISOString();
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3000', currency: 'USD', valid_from: at(48) }).expect(200);
    const policy = await newPolicy(team, { name: 'day', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '1000' }] });
    await send(team, [pay('r-1', '0.1', 'ETH', { timestamp: new Date(earlier).toISOString() })]);
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '2000', currency: 'USD', valid_from: change }).expect(200);
    await send(team, [pay('r-2', '0.1', 'ETH')]);
    const records = await (await loadedEvents(team.teamId)).query<{ id: string; value: string }>('SELECT id, toString(value) AS value FROM events WHERE team_id = {team:String}', { team: team.teamId });
    expect(Object.fromEntries(records.map((r) => [r.id, r.value]))).to.deep.equal({ 'r-1': '300', 'r-2': '200' });
    const budgets = (await api().get('/api/v1/budgets').query({ policy_id: policy.id }).set(...team.auth).expect(200)).body.data as { spent: string }[];
    expect(budgets[0]!.spent).to.equal('500');
  });

  it('a team in EUR: policies count in EUR, USDC through a USD rate; changing the currency moves the policies and says so in the audit log', async () => {
    const team = await newTeam();
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'EUR' }).expect(200);
    await api().put('/api/v1/rates/USD').set(...team.auth).send({ value: '0.92', currency: 'EUR', valid_from: new Date(Date.now() - 24 * HOUR).toISOString() }).expect(200);
    const policy = await newPolicy(team, { name: 'day', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '50' }] });
    expect(policy.currency).to.equal('EUR');
    const usd = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'x', limits: [{ kind: 'daily', amount: '1' }], currency: 'USD' }).expect(400);
    expect(usd.body.error.details[0]).to.include({ field: 'currency' });
    // 20 EURC + 30 USDC (27.6 EUR) = 47.6 EUR: under; 3 EURC more, 50.6: over.
    expect((await send(team, [pay('e-1', '20', 'EURC'), pay('e-2', '30', 'USDC')])).alerts_created).to.equal(0);
    expect((await send(team, [pay('e-3', '3', 'EURC')])).alerts_created).to.equal(1);
    const breach = (await alerts(team)).find((a) => a.policyId === policy.id)!;
    expect(breach).to.include({ observed: '50.6', limit: '50' });
    const budgets = (await api().get('/api/v1/budgets').query({ policy_id: policy.id }).set(...team.auth).expect(200)).body.data as { spent: string; currency: string }[];
    expect(budgets[0]).to.include({ currency: 'EUR', spent: '50.6' });

    // Back to USD: the policy counts in USD from now on, and the audit log names it.
    await api().patch('/api/v1/team').set(...team.auth).send({ currency: 'USD' }).expect(200);
    expect((await api().get(`/api/v1/policies/${policy.id}`).set(...team.auth).expect(200)).body.currency).to.equal('USD');
    const log = (await api().get('/api/v1/audit-log').query({ resource_type: 'team' }).set(...team.auth).expect(200)).body.data as { changes: Record<string, { before: unknown; after: unknown }> }[];
    expect(log[0]!.changes.currency).to.deep.equal({ before: 'EUR', after: 'USD' });
    expect(log[0]!.changes.policies!.after).to.deep.equal([policy.id]);
  });

  it('a policy from before values (no currency, every asset) keeps adding amounts as it did', async () => {
    const team = await newTeam();
    const legacy = await newPolicy(team, { name: 'old', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '10' }] });
    // As the upgrade leaves a policy stored before currencies: NULL (nothing converted).
    await testEnv().deps.db.transaction((sql) => sql.run('UPDATE policies SET currency = NULL WHERE id = ?', [legacy.id]));
    await api().patch(`/api/v1/policies/${legacy.id}`).set(...team.auth).send({ name: 'old (renamed)' }).expect(200);
    expect((await api().get(`/api/v1/policies/${legacy.id}`).set(...team.auth).expect(200)).body.currency).to.equal(null);
    // 6 USDC + 5 EURC: 11 as amounts, over 10 (in value, 6 + 5.4 would be over too; 0.001 ETH shows the difference below).
    expect((await send(team, [pay('l-1', '6', 'USDC'), pay('l-2', '3', 'EURC')])).alerts_created).to.equal(0);
    expect((await send(team, [pay('l-3', '1.5', 'WETH')])).alerts_created).to.equal(1);
    const breach = (await alerts(team)).find((a) => a.policyId === legacy.id)!;
    expect(breach).to.include({ observed: '10.5', limit: '10' });
    expect((await alerts(team)).filter((a) => a.kind === 'unvalued')).to.have.length(0);
    // A change of its filter to several assets without a currency is refused; giving it one is the way to value it.
    const refused = await api().patch(`/api/v1/policies/${legacy.id}`).set(...team.auth).send({ match: { assets: ['USDC', 'EURC'] } }).expect(400);
    expect(refused.body.error.details[0]).to.include({ field: 'currency' });
    expect((await api().patch(`/api/v1/policies/${legacy.id}`).set(...team.auth).send({ currency: 'USD' }).expect(200)).body.currency).to.equal('USD');
  });

  it('a record without an asset that captures an authorization is paid in, and valued by, the authorization\'s asset', async () => {
    const team = await newTeam();
    await api().put('/api/v1/rates/EUR').set(...team.auth).send({ value: '1.08', currency: 'USD', valid_from: new Date(Date.now() - HOUR).toISOString() }).expect(200);
    const policy = await newPolicy(team, { name: 'day', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '100' }], action: 'block' });
    const auth = (await api().post('/api/v1/authorizations').set(...team.auth).send({ agent_id: 'research-bot', endpoint: 'https://api.example.com/v1/search', amount: '10', asset: 'EURC' }).expect(200)).body;
    expect(auth.decision).to.equal('approved');
    const answer = await send(team, [{ ...pay('c-1', '10', ''), asset: undefined, authorization_id: auth.id }]);
    expect(answer.warnings).to.have.length(1);
    expect(answer.warnings[0]).to.deep.include({ field: 'asset' });
    expect((answer.warnings[0] as unknown as { message: string }).message).to.include(`captured authorization ${auth.id}, whose asset EURC`);
    const values = (await api().post('/api/v1/records/values').set(...team.auth).send({ ids: ['c-1'] }).expect(200)).body.data;
    expect(values[0]).to.include({ value: '10.8', currency: 'USD' });
    const budgets = (await api().get('/api/v1/budgets').query({ policy_id: policy.id }).set(...team.auth).expect(200)).body.data as { spent: string; held: string }[];
    expect(budgets[0]).to.include({ spent: '10.8', held: '0' });
  });
});
