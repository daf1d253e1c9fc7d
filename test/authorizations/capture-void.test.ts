/**
 * Capture and void as one serialised decision, a retried capture, and the published SDK's own flow
 * where the payment client settles the 402 itself and the SDK records amount 0.
 */
import { expect } from 'chai';
import { ApiStorage, MemoryStorage, wrapWithSentinel } from '@x402sentinel/x402';
import { api, errorOf, listenOnce, newTeam, describeOnEachRegistry } from '../helpers/context.js';
import { authorize } from '../helpers/authorizations.js';
import { type Team } from '../helpers/common.js';


async function summary(team: Team): Promise<{ totalSpend: string; count: number }> {
  return (await api().get('/api/v1/analytics/summary').set(...team.auth).expect(200)).body;
}

describeOnEachRegistry('authorizations: capture and void', function () {
  this.timeout(120_000);

  it('300 capture/void pairs sent at once: exactly one of each pair wins, and spend is the captures that answered 200', async () => {
    const team = await newTeam('race');
    const server = await listenOnce();
    try {
      const post = (path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${team.apiKey}`, 'Content-Type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
      const auths: string[] = [];
      for (let i = 0; i < 300; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, (_, j) => post('/api/v1/authorizations', { agent_id: `bot-${(i + j) % 7}`, endpoint: 'https://api.example.com/v1/x', amount: '2', asset: 'USDC' })),
        );
        for (const r of batch) {
          expect(r.status).to.equal(200);
          auths.push(r.body.id as string);
        }
      }
      const pairs = await Promise.all(auths.map((id) => Promise.all([post(`/api/v1/authorizations/${id}/capture`, { amount: '1.5' }), post(`/api/v1/authorizations/${id}/void`)])));
      let captures = 0;
      pairs.forEach(([capture, voided]) => {
        expect([capture.status, voided.status].sort()).to.deep.equal([200, 409]);
        const loser = capture.status === 409 ? capture : voided;
        const details = errorOf(loser.body).details as { status: string; authorization: { status: string } };
        expect(details.status).to.equal(capture.status === 409 ? 'voided' : 'captured');
        expect(details.authorization.status).to.equal(details.status);
        if (capture.status === 200) captures++;
      });
      // Both outcomes happened, or the race was not a race.
      expect(captures).to.be.above(0).and.below(300);
      const s = await summary(team);
      expect(s.count).to.equal(captures);
      expect(s.totalSpend).to.equal(String(1.5 * captures));
      // A capture record exists exactly for the captures that answered 200.
      const records = (await api().post('/v1/audit/query').set(...team.auth).send({}).expect(200)).body as { id: string }[];
      const won = new Set(auths.filter((_, i) => pairs[i]![0].status === 200).map((id) => `${id}.capture`));
      expect(new Set(records.map((r) => r.id))).to.deep.equal(won);
    } finally {
      await server.close();
    }
  });

  it('the same capture sent again answers 200 with the captured authorization and stores nothing twice; another amount is a 409', async () => {
    const team = await newTeam('recapture');
    const a = await authorize(team, { amount: '3' });
    const first = (await api().post(`/api/v1/authorizations/${a.id}/capture`).set(...team.auth).send({ amount: '2.5' }).expect(200)).body;
    const again = (await api().post(`/api/v1/authorizations/${a.id}/capture`).set(...team.auth).send({ amount: '2.50' }).expect(200)).body;
    expect(again).to.deep.equal(first);
    expect(again).to.deep.include({ status: 'captured', captured_amount: '2.5', captured_by: `${a.id}.capture` });
    const other = await api().post(`/api/v1/authorizations/${a.id}/capture`).set(...team.auth).send({ amount: '1' }).expect(409);
    expect(errorOf(other.body).message).to.include('captured for 2.5');
    // The default amount is the held one, which is not what was captured.
    await api().post(`/api/v1/authorizations/${a.id}/capture`).set(...team.auth).send({}).expect(409);
    await api().post(`/api/v1/authorizations/${a.id}/void`).set(...team.auth).expect(409);
    expect(await summary(team)).to.deep.include({ totalSpend: '2.5', count: 1 });
    // Voiding twice is a retried void; capturing a voided one is a 409 naming its state.
    const b = await authorize(team, { amount: '1' });
    await api().post(`/api/v1/authorizations/${b.id}/void`).set(...team.auth).expect(200);
    expect((await api().post(`/api/v1/authorizations/${b.id}/void`).set(...team.auth).expect(200)).body.status).to.equal('voided');
    const late = await api().post(`/api/v1/authorizations/${b.id}/capture`).set(...team.auth).send({}).expect(409);
    expect((errorOf(late.body).details as { status: string }).status).to.equal('voided');
    const zero = await api().post(`/api/v1/authorizations/${a.id}/capture`).set(...team.auth).send({ amount: '0' }).expect(400);
    expect((errorOf(zero.body).details as { field: string }[])[0]!.field).to.equal('amount');
    expect(await summary(team)).to.deep.include({ totalSpend: '2.5', count: 1 });
  });

  it("the published SDK wrapping a payment client that settles the 402 itself: the zero-amount record captures at the held amount", async () => {
    const team = await newTeam('sdk-zero');
    await api()
      .post('/api/v1/policies')
      .set(...team.auth)
      .send({ name: 'day', action: 'block', limits: [{ kind: 'daily', amount: '1' }] })
      .expect(201);
    const server = await listenOnce();
    const SPENDSCOPE = server.url;
    const KEY = team.apiKey;
    // A payment client like @x402/fetch: it pays the 402 itself, so the caller only sees the paid
    // answer with its settlement header; the SDK never learns the price.
    let paid = 0;
    const fetchWithPayment = async (): Promise<Response> => {
      paid++;
      const settlement = { success: true, transaction: `0x${paid.toString(16).padStart(64, '0')}`, network: 'eip155:8453', payer: '0x00000000000000000000000000000000000000aa' };
      return new Response(JSON.stringify({ ok: true }), {
        status: 200,
        headers: { 'content-type': 'application/json', 'payment-response': Buffer.from(JSON.stringify(settlement)).toString('base64') },
      });
    };
    const storage = new ApiStorage({ baseUrl: SPENDSCOPE, apiKey: KEY, batchSize: 1, flushIntervalMs: 3_600_000 });
    const local = new MemoryStorage();
    try {
      // The client example of docs/authorizations.md, as written.
      const metadata: Record<string, string> = {};
      const pay = wrapWithSentinel(fetchWithPayment, { agentId: 'research-bot', metadata, audit: { storage } });
      const paidCall = async (url: string, price: string, callId: string): Promise<Response> => {
        const auth = (await fetch(`${SPENDSCOPE}/api/v1/authorizations`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ agent_id: 'research-bot', endpoint: url, amount: price, asset: 'USDC', idempotency_key: callId }),
        }).then((r) => r.json())) as { id: string; decision: string; reasons: string[] };
        if (auth.decision !== 'approved') throw new Error(`not paying: ${auth.reasons.join('; ')}`);
        metadata.authorization_id = auth.id;
        try {
          return await pay(url);
        } catch (err) {
          await fetch(`${SPENDSCOPE}/api/v1/authorizations/${auth.id}/void`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}` } });
          throw err;
        }
      };
      await paidCall('https://api.example.com/v1/search', '0.4', 'call-1');
      await storage.flush();
      await paidCall('https://api.example.com/v1/search', '0.4', 'call-2');
      await storage.flush();
      // 0.8 paid: a third payment of 0.4 would pass the daily limit of 1, and is declined.
      const refused = await paidCall('https://api.example.com/v1/search', '0.4', 'call-3').then(
        () => undefined,
        (err: Error) => err,
      );
      expect(refused?.message).to.match(/^not paying: Declined by policy "day"/);
      expect(paid).to.equal(2);

      const list = (await api().get('/api/v1/authorizations?agent=research-bot').set(...team.auth).expect(200)).body.data as Record<string, unknown>[];
      const captured = list.filter((a) => a.status === 'captured');
      expect(captured).to.have.length(2);
      for (const a of captured) expect(a.captured_amount).to.equal('0.4');
      expect(await summary(team)).to.deep.include({ totalSpend: '0.8', count: 2 });
      // The SDK's own reads give the records back as it sent them (amount "0.000000").
      const sent = (await api().post('/v1/audit/query').set(...team.auth).send({}).expect(200)).body as Record<string, unknown>[];
      expect(sent.map((r) => r.amount)).to.deep.equal(['0.000000', '0.000000']);
      for (const r of sent) await local.write(r as never);
      const mine = (await api().post('/v1/audit/query').set(...team.auth).send({ orderBy: 'created_at' }).expect(200)).body;
      expect(mine).to.deep.equal(await local.query({ orderBy: 'created_at' }));
    } finally {
      storage.destroy();
      await server.close();
    }
  });

  it('a zero-amount record of a call that did not go through leaves the hold, and says so', async () => {
    const team = await newTeam('zero-failed');
    const a = await authorize(team, { amount: '0.7' });
    const base = { agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', method: 'GET', amount: '0.000000', asset: 'USDC', metadata: { authorization_id: a.id } };
    const failed = (await api().post('/api/v1/events').set(...team.auth).send({ events: [{ ...base, id: 'z-1', status_code: 402 }] }).expect(200)).body;
    expect(failed.warnings).to.have.length(1);
    expect(failed.warnings[0]).to.deep.include({ index: 0, field: 'amount' });
    expect(failed.warnings[0].message).to.include('stays held');
    expect((await api().get(`/api/v1/authorizations/${a.id}`).set(...team.auth).expect(200)).body.status).to.equal('held');
    const ok = (await api().post('/api/v1/events').set(...team.auth).send({ events: [{ ...base, id: 'z-2', status_code: 200 }] }).expect(200)).body;
    expect(ok.warnings[0].message).to.include('captured at its held amount 0.7');
    const after = (await api().get(`/api/v1/authorizations/${a.id}`).set(...team.auth).expect(200)).body;
    expect(after).to.deep.include({ status: 'captured', captured_amount: '0.7', captured_by: 'z-2' });
    // Worth what it captured, by its rate (USDC: one for one), not the 0 it was sent with.
    expect(await summary(team)).to.deep.include({ totalSpend: '0.7', totalValue: '0.7', unvalued: 0, count: 2 });
  });
});
