/**
 * What an x402 client sends: an authorization asked in the asset's atomic units (`amount_raw`, as
 * a payment requirement states it), and a capture that carries the settlement onto its record.
 */
import { expect } from 'chai';
import { api, describeOnEachRegistry, errorOf, newTeam } from '../helpers/context.js';
import { type Team } from '../helpers/common.js';

const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const WETH = '0xc02aaa39b223fe8d0a5e5c4f27ead9083c756cc2';
const TX = `0x${'ab'.repeat(32)}`;
const PAYER = '0x00000000000000000000000000000000000000aa';

const ask = (team: Team, body: Record<string, unknown>, status = 200) =>
  api()
    .post('/api/v1/authorizations')
    .set(...team.auth)
    .send({ agent_id: 'x402-bot', endpoint: 'https://api.example.com/v1/paid', ...body })
    .expect(status);

const fields = (body: unknown) => (errorOf(body).details as { field: string; message: string }[]).map((d) => d.field);

describeOnEachRegistry('authorizations from an x402 client', function () {
  this.timeout(60_000);

  it('amount_raw is made an exact amount by the asset\'s decimals; an asset of unknown decimals, or none, is a 400 naming it', async () => {
    const team = await newTeam('raw');
    const approved = (await ask(team, { amount_raw: '10000', asset: USDC_BASE, network: 'eip155:8453' })).body;
    expect(approved).to.include({ decision: 'approved', amount: '0.01', asset: USDC_BASE });
    // The team's rate gives ETH its decimals, as it does for records.
    await api().put('/api/v1/rates/ETH').set(...team.auth).send({ value: '3000', currency: 'USD', decimals: 18 }).expect(200);
    expect((await ask(team, { amount_raw: '1500000000000000', asset: 'ETH' })).body).to.include({ amount: '0.0015' });
    // With amount too, the two must agree.
    expect((await ask(team, { amount: '0.010', amount_raw: '10000', asset: 'USDC' })).body).to.include({ amount: '0.01' });
    const disagree = (await ask(team, { amount: '0.02', amount_raw: '10000', asset: 'USDC' }, 400)).body;
    expect(fields(disagree)).to.deep.equal(['amount_raw']);

    const unknown = (await ask(team, { amount_raw: '1000', asset: WETH }, 400)).body;
    expect(fields(unknown)).to.deep.equal(['amount_raw']);
    expect(errorOf(unknown).message).to.include(`${WETH}, whose decimals are unknown`);
    expect(fields((await ask(team, { amount_raw: '1000' }, 400)).body)).to.deep.equal(['asset']);
    expect(fields((await ask(team, { asset: 'USDC' }, 400)).body)).to.deep.equal(['amount']);
    expect(fields((await ask(team, { amount_raw: '1.5', asset: 'USDC' }, 400)).body)).to.deep.equal(['amount_raw']);
    expect(fields((await ask(team, { amount_raw: '1'.repeat(40), asset: 'USDC' }, 400)).body)).to.deep.equal(['amount_raw']);
    // Nothing refused was held: the one approved, and the two that followed.
    const held = (await api().get('/api/v1/authorizations').query({ status: 'held' }).set(...team.auth).expect(200)).body.data as unknown[];
    expect(held).to.have.length(3);
  });

  it('a capture stores the settlement on its record: transaction, payer, network, time, status and duration; a retry stores nothing twice', async () => {
    const team = await newTeam('settled');
    const auth = (await ask(team, { amount_raw: '250000', asset: USDC_BASE, network: 'base', payee_address: '0x00000000000000000000000000000000000000bb' })).body;
    const settlement = { amount: '0.25', tx_hash: TX, payer_address: PAYER, network: 'eip155:8453', settled_at: '2026-12-01T10:00:03.000Z', status_code: 200, response_time_ms: 412 };
    const captured = (await api().post(`/api/v1/authorizations/${auth.id}/capture`).set(...team.auth).send(settlement).expect(200)).body;
    expect(captured).to.include({ status: 'captured', captured_amount: '0.25' });
    expect((await api().post(`/api/v1/authorizations/${auth.id}/capture`).set(...team.auth).send(settlement).expect(200)).body).to.include({ status: 'captured' });
    const record = (await api().get(`/api/v1/audit/${auth.id}.capture`).set(...team.auth).expect(200)).body;
    expect(record).to.include({ amount: '0.25', asset: USDC_BASE, tx_hash: TX, payer_address: PAYER, network: 'eip155:8453', status_code: 200, response_time_ms: 412 });
    expect(new Date(record.settled_at).toISOString()).to.equal(settlement.settled_at);
    const count = (await api().post('/api/v1/audit/count').set(...team.auth).send({}).expect(200)).body.count;
    expect(count).to.equal(1);
  });

  it("a capture's settlement fields are checked as a record's: a bad one is a 400 naming it, and nothing is captured", async () => {
    const team = await newTeam('bad-settlement');
    const auth = (await ask(team, { amount: '1', asset: 'USDC' })).body;
    const capture = (body: Record<string, unknown>) => api().post(`/api/v1/authorizations/${auth.id}/capture`).set(...team.auth).send(body);
    expect(fields((await capture({ settled_at: 'yesterday' }).expect(400)).body)).to.deep.equal(['settled_at']);
    expect(fields((await capture({ network: 'not a network' }).expect(400)).body)).to.deep.equal(['network']);
    expect(fields((await capture({ status_code: 1000 }).expect(400)).body)).to.deep.equal(['status_code']);
    expect(fields((await capture({ response_time_ms: -1 }).expect(400)).body)).to.deep.equal(['response_time_ms']);
    const still = (await api().get(`/api/v1/authorizations/${auth.id}`).set(...team.auth).expect(200)).body;
    expect(still.status).to.equal('held');
  });
});
