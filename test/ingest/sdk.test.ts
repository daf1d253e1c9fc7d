/**
 * The published client SDK (@x402sentinel/x402 0.2.0), unchanged, writing through its ApiStorage
 * to a real server: the most honest test of wire compatibility with /audit/batch.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiStorage, AuditLogger } from '@x402sentinel/x402';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newTeam, testEnv, describeOnEachRegistry } from '../helpers/context.js';
import { run } from '../helpers/processes.js';
import { storedRows } from './fixtures.js';

describeOnEachRegistry('ingest from the published SDK (ApiStorage)', function () {
  this.timeout(30_000);
  let server: http.Server;
  let base: string;

  before(async () => {
    server = http.createServer(testEnv().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // The SDK's base URL may be <site>/api/v1 (zero-config helper), the bare site, or end in /v1.
  for (const prefix of ['/api/v1', '', '/v1']) {
    it(`stores every record the SDK flushes to ${prefix || 'the bare site'}, without falling back to memory`, async () => {
      const team = await newTeam();
      const storage = new ApiStorage({ apiKey: team.apiKey, baseUrl: `${base}${prefix}`, batchSize: 50, flushIntervalMs: 3_600_000 });
      const logger = new AuditLogger({ storage });
      const written: string[] = [];
      try {
        for (let i = 0; i < 120; i++) {
          const record = await logger.log({
            agent_id: `agent-${i % 3}`,
            team: i % 2 ? 'research' : null,
            human_sponsor: null,
            amount: (0.001 * (i + 1)).toFixed(6),
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
            response_time_ms: 10 + i,
            policy_id: null,
            policy_evaluation: i % 10 === 0 ? 'flagged' : 'allowed',
            budget_remaining: null,
            task_id: null,
            session_id: null,
            metadata: {},
            settled_at: null,
            tags: i % 4 === 0 ? ['search'] : [],
          } as never);
          written.push(record.id);
        }
        await storage.flush(); // the last 20: the SDK flushed 50 and 100 on its own
        expect((storage as unknown as { useFallback: boolean }).useFallback, 'SDK switched to local storage').to.equal(false);
        const rows = await storedRows(team.teamId);
        expect(rows.map((r) => r.id).sort()).to.deep.equal([...written].sort());
        expect(rows.every((r) => r.source === 'sdk')).to.equal(true);
      } finally {
        storage.destroy();
      }
    });
  }

  /** The SDK in a child process (its own clock), writing to this process's server. */
  async function sdkProcess(env: Record<string, string>): Promise<{ fellBack: boolean; ids: string[]; count: number }> {
    const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sdk-client.js');
    const result = await run(process.execPath, [script], env);
    if (result.code !== 0) throw new Error(`SDK process failed (${result.code}): ${result.stderr}`);
    return JSON.parse(result.stdout) as { fellBack: boolean; ids: string[]; count: number };
  }

  it('batchSize 500: every batch is stored, and the SDK never falls back to local storage', async () => {
    const team = await newTeam();
    const out = await sdkProcess({ API_KEY: team.apiKey, BASE_URL: `${base}/api/v1`, BATCH_SIZE: '500', COUNT: '1200' });
    expect(out.fellBack, 'SDK switched to local storage').to.equal(false);
    expect(out.count, 'the SDK counted what it sent, remotely').to.equal(1200);
    const rows = await storedRows(team.teamId);
    expect(rows.map((r) => r.id).sort()).to.deep.equal([...out.ids].sort());
  });

  it('a client clock 10 minutes fast: records are stored at the receive time, none lost, no fallback', async () => {
    const team = await newTeam();
    const before = Date.now();
    const out = await sdkProcess({ API_KEY: team.apiKey, BASE_URL: `${base}/api/v1`, BATCH_SIZE: '500', COUNT: '600', CLOCK_SKEW_MS: String(10 * 60_000) });
    const after = Date.now();
    expect(out.fellBack, 'SDK switched to local storage').to.equal(false);
    expect(out.count).to.equal(600);
    const rows = await storedRows(team.teamId);
    expect(rows).to.have.length(600);
    for (const row of rows) {
      expect(Number(row.event_ms)).to.be.within(before, after);
      expect(JSON.parse(String(row.record_extra)).client_created_at).to.be.above(after + 5 * 60_000 - 60_000);
    }
  });
});
