import crypto from 'node:crypto';
import { loadedEvents } from '../helpers/context.js';

/** A record exactly as the SDK (@x402sentinel/x402 0.2.0) builds it: every field present. */
export function sdkRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const createdAt = Date.now() - 60_000;
  const endpoint = 'https://api.example.com/v1/search?q=spend';
  return {
    id: crypto.createHash('sha256').update(`agent-1|${endpoint}|${createdAt}|0.001000|${Math.random()}`).digest('hex').slice(0, 16),
    agent_id: 'agent-1',
    team: 'research',
    human_sponsor: 'ana@example.com',
    amount: '0.001000',
    amount_raw: '0',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    network: 'eip155:8453',
    scheme: 'exact',
    tx_hash: '0xdeadbeef',
    payer_address: '0x1111111111111111111111111111111111111111',
    payee_address: '0x2222222222222222222222222222222222222222',
    facilitator: null,
    endpoint,
    method: 'GET',
    status_code: 200,
    response_time_ms: 182,
    policy_id: null,
    policy_evaluation: 'allowed',
    budget_remaining: '9.999000',
    task_id: 'task-7',
    session_id: null,
    metadata: { purpose: 'test' },
    created_at: createdAt,
    settled_at: createdAt,
    tags: ['search'],
    ...overrides,
  };
}

/** A minimal interface-shaped event (interface.md 2.6). */
export function event(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { agent_id: 'agent-1', endpoint: 'https://api.example.com/v1/data', method: 'POST', amount: '0.5', asset: 'USDC', ...overrides };
}

export async function storedRows(teamId: string): Promise<Record<string, unknown>[]> {
  return (await loadedEvents(teamId)).query(
    `SELECT *, toUnixTimestamp64Milli(event_time) AS event_ms, toUnixTimestamp64Milli(received_at) AS received_ms
       FROM events WHERE team_id = {team:String} ORDER BY event_time, id`,
    { team: teamId },
  );
}

export async function storedCount(teamId: string): Promise<number> {
  const [row] = await (await loadedEvents(teamId)).query<{ n: string }>('SELECT count() AS n FROM events WHERE team_id = {team:String}', { team: teamId });
  return Number(row!.n);
}
