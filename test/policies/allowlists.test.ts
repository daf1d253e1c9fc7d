/**
 * Allowlists (issue 32): a policy's `allow` {payees, networks, assets, endpoints}, deny by default.
 * Each field under each action, for authorizations and for records; EVM addresses without case.
 */
import { expect } from 'chai';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';
import { authorize } from '../helpers/authorizations.js';
import { type Team } from '../helpers/common.js';

type Action = 'flag' | 'block' | 'approve';

const PAYEE = '0x52908400098527886E0F7030069857D2E4169EE7';
const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

/** Per field: the allowlist, an authorization body inside it and one outside, and what the reason names. */
const FIELDS = {
  payees: { allow: [PAYEE], inside: { payee_address: PAYEE.toLowerCase() }, outside: { payee_address: '0x1111111111111111111111111111111111111111' }, named: 'payee 0x1111111111111111111111111111111111111111' },
  networks: { allow: ['base'], inside: { network: 'eip155:8453' }, outside: { network: 'solana' }, named: 'network solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' },
  assets: { allow: [USDC_BASE], inside: { asset: USDC_BASE.toUpperCase().replace('0X', '0x') }, outside: { asset: 'EURC' }, named: 'asset EURC' },
  endpoints: { allow: ['*.example.com'], inside: { endpoint: 'https://api.example.com/v1/x' }, outside: { endpoint: 'https://api.other.net/v1/x' }, named: 'endpoint https://api.other.net/v1/x' },
} as const;

async function allowPolicy(team: Team, field: keyof typeof FIELDS, action: Action): Promise<string> {
  const res = await api()
    .post('/api/v1/policies')
    .set(...team.auth)
    .send({ name: `only known ${field}`, agents: ['bot'], limits: [], allow: { [field]: FIELDS[field].allow }, action })
    .expect(201);
  return res.body.id;
}

let n = 0;
async function record(team: Team, body: Record<string, unknown>): Promise<void> {
  const event = { id: `allow-${process.pid}-${++n}`, agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', method: 'POST', amount: '1', ...body };
  await api().post('/api/v1/events').set(...team.auth).send({ events: [event] }).expect(200);
}

const notAllowedAlerts = async (team: Team) =>
  ((await api().get('/api/v1/alerts?type=violation').set(...team.auth).expect(200)).body.data as { kind: string; severity: string; details: Record<string, unknown>; count: number }[]).filter(
    (a) => a.kind === 'not_allowed',
  );

describeOnEachRegistry('policies: allowlists', function () {
  this.timeout(120_000);

  for (const field of Object.keys(FIELDS) as (keyof typeof FIELDS)[]) {
    for (const action of ['flag', 'block', 'approve'] as const) {
      it(`allow.${field} under ${action}: inside is approved and raises nothing; outside is ${action === 'block' ? 'declined' : action === 'approve' ? 'pending' : 'approved and flagged'}, and a record outside raises not_allowed`, async () => {
        const team = await newTeam(`${field}-${action}`);
        const policyId = await allowPolicy(team, field, action);
        const { inside, outside, named } = FIELDS[field];
        const fine = await authorize(team, { amount: '1', payee_address: PAYEE, asset: USDC_BASE, network: 'base', ...inside });
        expect(fine).to.include({ decision: 'approved', status: 'held' });
        expect(fine.reasons).to.deep.equal([]);
        const out = await authorize(team, { amount: '1', payee_address: PAYEE, asset: USDC_BASE, network: 'base', ...outside });
        const verb = { flag: 'Flagged', block: 'Declined', approve: 'Needs approval' }[action];
        expect(out.reasons).to.deep.equal([`${verb} by policy "only known ${field}": not on its allowlist (${named})`]);
        expect(out.decision).to.equal({ flag: 'approved', block: 'declined', approve: 'pending' }[action]);
        if (action === 'block') {
          // Its alert says it was declined, and names what was outside the list.
          const [alert] = await notAllowedAlerts(team);
          expect(alert).to.deep.include({ severity: 'critical' });
          expect(alert!.details).to.deep.include({ declined: true, authorizationId: out.id, outside: [named], policyName: `only known ${field}` });
        }
        if (action === 'approve') {
          const [approval] = (await api().get('/api/v1/alerts?type=approval').set(...team.auth).expect(200)).body.data;
          expect(approval).to.include({ kind: 'not_allowed', subject: out.id, policyId });
        }
        // Records: inside raises nothing; outside raises one not_allowed alert per agent, policy and day, counted.
        const before = (await notAllowedAlerts(team)).reduce((sum, a) => sum + a.count, 0);
        await record(team, { payee_address: PAYEE, asset: USDC_BASE, network: 'base', ...inside });
        expect((await notAllowedAlerts(team)).reduce((sum, a) => sum + a.count, 0)).to.equal(before);
        await record(team, { payee_address: PAYEE, asset: USDC_BASE, network: 'base', ...outside });
        await record(team, { payee_address: PAYEE, asset: USDC_BASE, network: 'base', ...outside });
        // One alert per agent, policy and day: under block the declined authorization opened it, and the records count in it.
        const alerts = await notAllowedAlerts(team);
        expect(alerts).to.have.length(1);
        expect(alerts[0]).to.deep.include({ count: action === 'block' ? 3 : 2, severity: action === 'flag' ? 'warning' : 'critical' });
        expect(alerts[0]!.details).to.deep.include({ outside: [named] });
      });
    }
  }

  it('EVM payees compare without case (checksummed, lower, upper); others (Solana) exactly; no payee is outside a payee list', async () => {
    const team = await newTeam('case');
    const solana = '7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV';
    await api().post('/api/v1/policies').set(...team.auth).send({ name: 'payees', agents: ['bot'], limits: [], allow: { payees: [PAYEE, solana] }, action: 'block' }).expect(201);
    for (const form of [PAYEE, PAYEE.toLowerCase(), `0x${PAYEE.slice(2).toUpperCase()}`]) expect((await authorize(team, { amount: '1', payee_address: form })).decision, form).to.equal('approved');
    expect((await authorize(team, { amount: '1', payee_address: solana })).decision).to.equal('approved');
    expect((await authorize(team, { amount: '1', payee_address: solana.toLowerCase() })).decision).to.equal('declined');
    const none = await authorize(team, { amount: '1' });
    expect(none).to.include({ decision: 'declined' });
    expect(none.reasons).to.deep.equal(['Declined by policy "payees": not on its allowlist (no payee given)']);
    // Stored canonical: the EVM address lower case, Solana's as written.
    const [policy] = (await api().get('/api/v1/policies').set(...team.auth).expect(200)).body.data;
    expect(policy.allow).to.deep.equal({ payees: [PAYEE.toLowerCase(), solana].sort() });
  });

  it('a policy needs a limit or an allowlist; bad list entries are 400s naming them; match narrows what the allowlist checks', async () => {
    const team = await newTeam('fields');
    const empty = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'nothing', limits: [] }).expect(400);
    expect(errorOf(empty.body).details).to.deep.equal([{ field: 'limits', message: 'must hold at least one limit when the policy has no allow list nor on_unreported' }]);
    const bad = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'bad', limits: [], allow: { networks: ['nowhere'], endpoints: ['not a host!'] } }).expect(400);
    expect((errorOf(bad.body).details as { field: string }[]).map((d) => d.field)).to.deep.equal(['allow.networks[0]', 'allow.endpoints[0]']);
    const p = (await api().post('/api/v1/policies').set(...team.auth).send({ name: 'llm vendors', agents: ['bot'], limits: [], match: { categories: ['llm'] }, allow: { endpoints: ['api.openai.com'] }, action: 'block' }).expect(201)).body;
    // A search call is not the policy's business; an LLM call to another vendor is.
    expect((await authorize(team, { amount: '1', endpoint: 'https://api.exa.ai/search', category: 'search' })).decision).to.equal('approved');
    expect((await authorize(team, { amount: '1', endpoint: 'https://api.anthropic.com/v1/messages', category: 'llm' })).decision).to.equal('declined');
    expect((await authorize(team, { amount: '1', endpoint: 'https://api.openai.com/v1/chat', category: 'llm' })).decision).to.equal('approved');
    // Patching the list away leaves a policy with nothing to check: refused.
    await api().patch(`/api/v1/policies/${p.id}`).set(...team.auth).send({ allow: null }).expect(400);
  });
});
