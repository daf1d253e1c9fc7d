/** Asking for an authorization in tests: agent `bot`, a fixed endpoint, in USDC, unless the body says otherwise. */
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
