/**
 * The published SDK in a process of its own, whose clock can run fast (CLOCK_SKEW_MS): as an agent
 * on another machine would. Logs COUNT records through AuditLogger and ApiStorage (BATCH_SIZE),
 * flushes, and prints {fellBack, ids} as JSON. Run by sdk.test.ts; not a test itself.
 */
import { ApiStorage, AuditLogger } from '@x402sentinel/x402';

const skew = Number(process.env.CLOCK_SKEW_MS ?? 0);
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + skew;

const storage = new ApiStorage({
  apiKey: process.env.API_KEY!,
  baseUrl: process.env.BASE_URL!,
  batchSize: Number(process.env.BATCH_SIZE ?? 50),
  flushIntervalMs: 3_600_000,
});
const logger = new AuditLogger({ storage });
const ids: string[] = [];
for (let i = 0; i < Number(process.env.COUNT ?? 100); i++) {
  const record = await logger.log({
    agent_id: `agent-${i % 3}`,
    team: 'research',
    human_sponsor: null,
    amount: (0.001 * ((i % 50) + 1)).toFixed(6),
    amount_raw: '0',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    network: 'eip155:8453',
    scheme: 'exact',
    tx_hash: null,
    payer_address: '',
    payee_address: '0x2222222222222222222222222222222222222222',
    facilitator: null,
    endpoint: `https://api.example.com/v1/item/${i}`,
    method: 'GET',
    status_code: 200,
    response_time_ms: 10,
    policy_id: null,
    policy_evaluation: 'allowed',
    budget_remaining: null,
    task_id: null,
    session_id: null,
    metadata: { run: 'sdk-client' },
    settled_at: null,
    tags: [],
  } as never);
  ids.push(record.id);
}
await storage.flush();
const count = await storage.count({});
storage.destroy();
process.stdout.write(JSON.stringify({ fellBack: (storage as unknown as { useFallback: boolean }).useFallback, ids, count }));
