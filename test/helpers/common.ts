/** What test files kept writing for themselves: waiting, a key's header, SDK-shaped ids, new keys and policies. */
import crypto from 'node:crypto';
import type { App } from '../../src/app.js';
import { api, newTeam } from './context.js';

/** A team made by newTeam: its id, name, admin key and that key's header. */
export type Team = Awaited<ReturnType<typeof newTeam>>;

/** Whoever sends a request: a team (its admin key) or `{ auth: bearer(key) }` for another key. */
export type Caller = Pick<Team, 'auth'>;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The header pair for supertest's `.set(...bearer(key))`. */
export const bearer = (key: string): [string, string] => ['Authorization', `Bearer ${key}`];

/** A record id as the SDK makes one: 16 random hex characters. */
export const sdkId = (): string => crypto.randomBytes(8).toString('hex');

export type Scope = 'ingest' | 'read' | 'admin' | 'approve';

export interface KeyOptions {
  /** Default: ingest and read, what an agent with the SDK holds. */
  scopes?: Scope[];
  /** The key's own rates (the API's snake_case); left out: the service defaults. */
  rateLimit?: { requests_per_second?: number; records_per_second?: number };
  /** Default: the scopes joined by dashes. */
  name?: string;
  /** The app to ask (one with a limiter of its own); default: the shared one. */
  app?: App;
}

/** A key as POST /api/v1/keys answers it (the key itself shown this once). */
export interface IssuedKey {
  apiKey: string;
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  createdAt: string;
  expiresAt: string | null;
  rateLimit: { requestsPerSecond: number | null; recordsPerSecond: number | null };
}

/** A new key of the team, issued through POST /api/v1/keys (201). */
export async function keyWith(team: Caller, options: KeyOptions = {}): Promise<IssuedKey> {
  const { scopes = ['ingest', 'read'], rateLimit, name = scopes.join('-'), app } = options;
  const res = await api(app)
    .post('/api/v1/keys')
    .set(...team.auth)
    .send({ name, scopes, ...(rateLimit ? { rate_limit: rateLimit } : {}) })
    .expect(201);
  return res.body as IssuedKey;
}

export type Limit = { kind: string; amount?: string; count?: number; endpoint?: string };

/** A policy as POST /api/v1/policies takes it; the name is optional here. */
export type PolicyBody = { name?: string; agents?: string[]; limits: Limit[]; action?: 'flag' | 'block' | 'approve' } & Record<string, unknown>;

/** A new policy of the team, made through POST /api/v1/policies (201): the policy as answered. */
export async function newPolicy(team: Caller, body: PolicyBody): Promise<{ id: string } & Record<string, any>> {
  const res = await api().post('/api/v1/policies').set(...team.auth).send({ name: 'policy', ...body }).expect(201);
  return res.body;
}

/** Payments above `amount` need a person: one per_call limit, action approve. */
export const askAbove = (amount: string, agents: string[] = ['bot']): PolicyBody => ({
  name: `ask above ${amount}`,
  agents,
  limits: [{ kind: 'per_call', amount }],
  action: 'approve',
});

/** A record as the evaluation tests send it: agent `bot` paying an example endpoint, with the fields a test sets. */
export interface TestRecord {
  agent_id?: string;
  endpoint?: string;
  amount: string;
  created_at: number;
  [field: string]: unknown;
}

let recordSeq = 0;

/** The record with an id of its own (unique in the run) and the defaults filled in. */
export const testRecord = (fields: TestRecord) => ({
  id: `rec-${process.pid}-${++recordSeq}`,
  agent_id: 'bot',
  endpoint: 'https://api.example.com/v1/x',
  method: 'POST',
  // Valued one for one in USD, the default currency of policies: a test of amounts counts them as values.
  asset: 'USDC',
  ...fields,
});

/** Sends records through POST /api/v1/events (200 expected): what was stored and the alerts they raised. */
export async function sendRecords(team: Caller, records: TestRecord[], app?: App): Promise<{ ingested: number; alerts_created: number }> {
  const res = await api(app).post('/api/v1/events').set(...team.auth).send({ events: records.map(testRecord) }).expect(200);
  return res.body;
}

/** The team's alerts (up to 200), with the filters `query` adds (`&status=open`). */
export async function alertsOf(team: Caller, query = '', app?: App): Promise<Record<string, any>[]> {
  const res = await api(app).get(`/api/v1/alerts?limit=200${query}`).set(...team.auth).expect(200);
  return res.body.data as Record<string, any>[];
}
