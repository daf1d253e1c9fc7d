/** Policies in value: limits of money in the team's currency across assets, and nothing that slips past them; on SQLite and PostgreSQL. */
import BigNumber from 'bignumber.js';
import { expect } from 'chai';
import { newPolicy } from '../helpers/common.js';
import { api, describeOnEachRegistry, newTeam } from '../helpers/context.js';

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
});
