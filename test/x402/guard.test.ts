/**
 * @spendscope/x402 in a real payment's path: a local chain, the EIP-3009 token, a facilitator and a
 * paid API (scripts/x402-stack), an x402 client paying through `@x402/fetch` and `@x402/axios`,
 * with spendscope asked before each payment is signed and told of its settlement after.
 */
import { expect } from 'chai';
import axios from 'axios';
import { wrapAxiosWithPayment } from '@x402/axios';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';
import { DEV_KEYS, NETWORK } from '../../scripts/x402-stack/chain.js';
import { trackAxiosPayments, withSpendscope } from '../../clients/x402/src/index.js';
import { newPolicy, type Team } from '../helpers/common.js';
import { api, describeOnEachRegistry, listenOnce, newTeam } from '../helpers/context.js';
import { x402Stack, type X402Stack } from '../helpers/x402.js';
import { PRICES } from '../../scripts/x402-stack/paid-api.js';

type Authorization = { id: string; status: string; captured_amount: string | null; amount: string; asset: string; network: string | null; payee_address: string | null };

describeOnEachRegistry('x402 payments guarded by spendscope', function () {
  this.timeout(120_000);
  let stack: X402Stack;
  let service: { url: string; close: () => Promise<void> };

  before(async function () {
    this.timeout(180_000);
    stack = await x402Stack();
    service = await listenOnce();
  });

  after(async () => {
    await service.close();
  });

  /** A team whose rates know the local token: 1 USD, 6 decimals (it is no built-in stablecoin). */
  async function teamWithToken(label: string): Promise<Team> {
    const team = await newTeam(label);
    await api()
      .put(`/api/v1/rates/${stack.chain.token.address}`)
      .set(...team.auth)
      .send({ value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 3_600_000).toISOString() })
      .expect(200);
    return team;
  }

  const authorizations = async (team: Team) => (await api().get('/api/v1/authorizations').query({ limit: 100 }).set(...team.auth).expect(200)).body.data as Authorization[];

  it('a payment within budget settles on chain, and its record carries the transaction, the amount captured equal to the transfer', async () => {
    const team = await teamWithToken('x402-within');
    await newPolicy(team, { name: 'day', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '1' }], action: 'block' });
    const client = withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' });
    const before = await stack.balanceOf(stack.payee);
    const res = await wrapFetchWithPayment(fetch, client)(`${stack.api.url}/dear`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ answer: 'dear' });
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.dear));

    const [auth] = await authorizations(team);
    expect(auth).to.include({ status: 'captured', amount: '0.25', captured_amount: '0.25', network: 'eip155:31337' });
    expect(auth!.payee_address?.toLowerCase()).to.equal(stack.payee.toLowerCase());
    const record = (await api().get(`/api/v1/audit/${auth!.id}.capture`).set(...team.auth).expect(200)).body;
    expect(record.tx_hash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await stack.receipt(record.tx_hash)).to.deep.include({ status: 'success' });
    expect(record).to.include({ amount: '0.25', network: 'eip155:31337' });
    expect(record.payer_address.toLowerCase()).to.equal(stack.payerAddress(3).toLowerCase());
  });

  it('a payment over a block budget is aborted before it is signed: no transfer on chain, the reason says why', async () => {
    const team = await teamWithToken('x402-over');
    await newPolicy(team, { name: 'tiny', agents: ['x402-bot'], limits: [{ kind: 'per_call', amount: '0.1' }], action: 'block' });
    const client = withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' });
    const before = await stack.balanceOf(stack.payee);
    const served = stack.api.served;
    const refused = await wrapFetchWithPayment(fetch, client)(`${stack.api.url}/dear`).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused?.message).to.match(/Payment creation aborted: spendscope declined authorization auth_\w+: Declined by policy "tiny"/);
    expect(await stack.balanceOf(stack.payee)).to.equal(before);
    expect(stack.api.served).to.equal(served);
    expect((await authorizations(team)).map((a) => a.status)).to.deep.equal(['declined']);
  });

  it('spendscope unreachable: the payment is refused by default, and made with onUnavailable allow', async () => {
    const closed = await listenOnce();
    await closed.close();
    const team = await teamWithToken('x402-down');
    const before = await stack.balanceOf(stack.payee);
    const denied = await wrapFetchWithPayment(fetch, withSpendscope(stack.payer(), { url: closed.url, apiKey: team.apiKey, agentId: 'x402-bot' }))(`${stack.api.url}/cheap`).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(denied?.message).to.match(/spendscope unreachable: .*not paying \(onUnavailable: 'deny'\)/);
    expect(await stack.balanceOf(stack.payee)).to.equal(before);
    const allowed = await wrapFetchWithPayment(fetch, withSpendscope(stack.payer(), { url: closed.url, apiKey: team.apiKey, agentId: 'x402-bot', onUnavailable: 'allow' }))(`${stack.api.url}/cheap`);
    expect(allowed.status).to.equal(200);
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.cheap));
  });

  /** Waits until the team has a pending authorization, and returns it. */
  async function pendingOf(team: Team): Promise<Authorization> {
    for (let i = 0; i < 200; i++) {
      const pending = (await authorizations(team)).find((a) => a.status === 'pending');
      if (pending) return pending;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('no authorization became pending');
  }

  it('an approve policy: the client waits for a person; approved, the payment settles; denied, nothing moves', async () => {
    const team = await teamWithToken('x402-approve');
    await newPolicy(team, { name: 'ask above 0.1', agents: ['x402-bot'], limits: [{ kind: 'per_call', amount: '0.1' }], action: 'approve' });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot', approvalWaitS: 20 }));
    const before = await stack.balanceOf(stack.payee);
    const approved = pay(`${stack.api.url}/dear`);
    await api().post(`/api/v1/authorizations/${(await pendingOf(team)).id}/approve`).set(...team.auth).send({ note: 'ok' }).expect(200);
    expect((await approved).status).to.equal(200);
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.dear));

    const denied = pay(`${stack.api.url}/dear`).then(
      () => undefined,
      (err: Error) => err,
    );
    await api().post(`/api/v1/authorizations/${(await pendingOf(team)).id}/deny`).set(...team.auth).send({ note: 'no' }).expect(200);
    const deniedMessage = (await denied)?.message ?? '';
    expect(deniedMessage, deniedMessage).to.match(/Payment creation aborted: spendscope declined authorization auth_\w+: .*Denied by default: no$/);
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.dear));
    expect((await authorizations(team)).map((a) => a.status).sort()).to.deep.equal(['captured', 'declined']);
  });

  it('nobody decides within approvalWaitS: the payment is aborted and the pending authorization withdrawn', async () => {
    const team = await teamWithToken('x402-no-answer');
    await newPolicy(team, { name: 'ask always', agents: ['x402-bot'], limits: [{ kind: 'per_call', amount: '0.001' }], action: 'approve' });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot', approvalWaitS: 1 }));
    const before = await stack.balanceOf(stack.payee);
    const refused = await pay(`${stack.api.url}/cheap`).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused?.message).to.match(/spendscope: no decision within 1 s on authorization auth_\w+; not paying/);
    expect(await stack.balanceOf(stack.payee)).to.equal(before);
    expect((await authorizations(team)).map((a) => a.status)).to.deep.equal(['voided']);
  });

  it('approved, but the wallet fails to sign: nothing is paid and the hold is voided at once', async () => {
    const team = await teamWithToken('x402-unsigned');
    await newPolicy(team, { name: 'day', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '1' }], action: 'block' });
    const account = privateKeyToAccount(DEV_KEYS[3]!);
    const broken = new x402Client();
    broken.register('eip155:*', new ExactEvmScheme({ ...account, signTypedData: async () => Promise.reject(new Error('the wallet is locked')) }));
    broken.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: stack.chain.token.address }] });
    const failed = await wrapFetchWithPayment(fetch, withSpendscope(broken, { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' }))(`${stack.api.url}/cheap`).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failed?.message).to.include('the wallet is locked');
    expect((await authorizations(team)).map((a) => a.status)).to.deep.equal(['voided']);
  });

  it('an answer without a settlement leaves the hold reserved and says so; a settled amount of 0 voids; one above the hold captures the hold', async () => {
    const team = await teamWithToken('x402-odd');
    await newPolicy(team, { name: 'day', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '1' }], action: 'block' });
    const errors: string[] = [];
    const client = withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot', onError: (err) => errors.push(err.message) });
    // The paid API's own 402 and a payload the client signs for it, as @x402/fetch would make them.
    const unpaid = await fetch(`${stack.api.url}/cheap`);
    const required = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED')!);
    const settle = async (settleResponse?: Record<string, unknown>) => {
      const paymentPayload = await client.createPaymentPayload(required);
      await client.handlePaymentResponse({ paymentPayload, requirements: paymentPayload.accepted, ...(settleResponse ? { settleResponse: settleResponse as never } : {}) });
    };
    const settled = { success: true, transaction: `0x${'cd'.repeat(32)}`, network: NETWORK, payer: stack.payerAddress(3) };
    await settle();
    await settle({ ...settled, amount: '0' });
    await settle({ ...settled, amount: '99999999' });
    const [over, zero, none] = await authorizations(team);
    expect(none).to.include({ status: 'held' });
    expect(zero).to.include({ status: 'voided' });
    expect(over).to.include({ status: 'captured', captured_amount: '0.01' });
    expect(errors).to.have.length(2);
    expect(errors[0]).to.equal(`no settlement in the paid answer for authorization ${none!.id}: left held until it expires`);
    expect(errors[1]).to.include('settled amount "99999999" is not an atomic amount within the held 10000');
  });

  it('a facilitator that fails settlement: the hold is voided, nothing captured, no transfer', async () => {
    const team = await teamWithToken('x402-unsettled');
    await newPolicy(team, { name: 'day', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '1' }], action: 'block' });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' }));
    const before = await stack.balanceOf(stack.payee);
    stack.facilitator.failSettlement(true);
    try {
      const res = await pay(`${stack.api.url}/cheap`).catch((err: Error) => err);
      expect(res instanceof Response ? res.status : 'threw').to.not.equal(200);
    } finally {
      stack.facilitator.failSettlement(false);
    }
    expect(await stack.balanceOf(stack.payee)).to.equal(before);
    expect((await authorizations(team)).map((a) => a.status)).to.deep.equal(['voided']);
    const spent = (await api().get('/api/v1/analytics/summary').set(...team.auth).expect(200)).body;
    expect(spent).to.include({ count: 0 });
  });

  it('20 paid requests at once against a budget that admits exactly 10: ten transfers on chain, ten captured, spend exact', async () => {
    const team = await teamWithToken('x402-race');
    await newPolicy(team, { name: 'ten cheap ones', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '0.1' }], action: 'block' });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(stack.payer(4), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' }));
    const before = await stack.balanceOf(stack.payee);
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => pay(`${stack.api.url}/cheap`).then((r) => r.status, () => 'aborted' as const)));
    expect(outcomes.filter((o) => o === 200)).to.have.length(10);
    expect(outcomes.filter((o) => o === 'aborted')).to.have.length(10);
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.cheap) * 10n);
    const statuses = (await authorizations(team)).map((a) => a.status);
    expect(statuses.filter((s) => s === 'captured')).to.have.length(10);
    expect(statuses.filter((s) => s === 'declined')).to.have.length(10);
    const budgets = (await api().get('/api/v1/budgets').set(...team.auth).expect(200)).body.data as { spent: string; held: string }[];
    expect(budgets[0]).to.include({ spent: '0.1', held: '0' });
  });

  it('under @x402/axios (no payment-response hook in 2.11): trackAxiosPayments captures the same way', async () => {
    const team = await teamWithToken('x402-axios');
    await newPolicy(team, { name: 'day', agents: ['x402-bot'], limits: [{ kind: 'daily', amount: '1' }], action: 'block' });
    const client = withSpendscope(stack.payer(), { url: service.url, apiKey: team.apiKey, agentId: 'x402-bot' });
    const before = await stack.balanceOf(stack.payee);
    const paying = trackAxiosPayments(wrapAxiosWithPayment(axios.create(), client as never), client);
    const res = await paying.get(`${stack.api.url}/cheap`);
    expect(res.status).to.equal(200);
    expect((await stack.balanceOf(stack.payee)) - before).to.equal(BigInt(PRICES.cheap));
    expect((await authorizations(team)).map((a) => [a.status, a.captured_amount])).to.deep.equal([['captured', '0.01']]);
  });
});
