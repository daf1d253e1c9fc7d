/** Asking for an authorization in tests: agent `bot`, a fixed endpoint, in USDC, unless the body says otherwise. */
import type { AuthorizationRequest } from '../../src/authorizations/decision.js';
import type { Team } from './common.js';
import { api } from './context.js';

export async function authorize(team: Team, body: Record<string, unknown>) {
  const res = await api()
    .post('/api/v1/authorizations')
    .set(...team.auth)
    .send({ agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', asset: 'USDC', ...body })
    .expect(200);
  return res.body;
}

/** An authorization request of agent `bot` to api.example.com, as the route builds one, for a group commit's `authorize`. */
export function authorizationRequest(teamId: string, amount: string, asset = 'USDC'): AuthorizationRequest {
  return {
    teamId,
    agentId: 'bot',
    endpoint: 'https://api.example.com/v1/search',
    domain: 'api.example.com',
    amount,
    asset,
    network: 'eip155:8453',
    payeeAddress: null,
    category: 'api',
    tags: [],
    expiresInS: 300,
    idempotencyKey: null,
  };
}
