/** Asking for an authorization in tests: agent `bot`, a fixed endpoint unless the body says otherwise. */
import { api, newTeam } from './context.js';

export async function authorize(team: Awaited<ReturnType<typeof newTeam>>, body: Record<string, unknown>) {
  const res = await api()
    .post('/api/v1/authorizations')
    .set(...team.auth)
    .send({ agent_id: 'bot', endpoint: 'https://api.example.com/v1/x', ...body })
    .expect(200);
  return res.body;
}
