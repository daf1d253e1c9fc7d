/**
 * kill -9 during load: the service process is killed while clients send and the loader inserts,
 * restarted on the same data directory, and what was never answered is sent again (as the SDK
 * retries). Every acknowledged record must be stored exactly once, in events and every rollup.
 */
import { expect } from 'chai';
import Database from 'better-sqlite3';
import http from 'node:http';
import path from 'node:path';
import { MAIN, run, startService, tempDir, type RunningService } from '../helpers/processes.js';

const KEY = 'crash-test-key-0123456789';

interface Answer {
  status: number;
  body: { ingested?: number; duplicates?: number };
}

function send(service: RunningService, records: object[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ records });
    const url = new URL('/api/v1/audit/batch', service.baseUrl);
    const req = http.request(
      url,
      { method: 'POST', agent: false, headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function post(service: RunningService, path: string, payload: object): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(payload);
    const req = http.request(new URL(path, service.baseUrl), {
      method: 'POST',
      agent: false,
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${path}: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const batchOf = (b: number) =>
  Array.from({ length: 50 }, (_, i) => ({
    id: `k${b}-${i}`,
    agent_id: `agent-${(b + i) % 7}`,
    endpoint: `https://api.example.com/v1/${i % 5}`,
    method: 'POST',
    amount: `0.${String((b * 50 + i) % 1000).padStart(3, '0')}001`,
    asset: 'USDC',
    created_at: Date.now() - ((b * 50 + i) % 3_600_000),
  }));

describe('kill -9 during load', () => {
  it('loses no acknowledged record and counts none twice, in events and in every rollup', async function () {
    this.timeout(240_000);
    const dataDir = tempDir('crash');
    // Small blocks every 50 ms: the loader is inserting when the kill comes. A small level 0 of
    // the dedup index: its worker is writing and merging runs when the kill comes, and the retries
    // after it find their ids in runs.
    const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, LOAD_BLOCK_ROWS: '300', LOAD_INTERVAL_MS: '50', DEDUP_LEVEL0_KEYS: '500' };
    let service = await startService(env);
    const acknowledged = new Set<number>();
    const unanswered = new Set<number>();
    let next = 0;
    let killed = false;
    const senders = Array.from({ length: 8 }, async () => {
      while (!killed) {
        const b = next++;
        try {
          const answer = await send(service, batchOf(b));
          if (answer.status === 200) acknowledged.add(b);
          else unanswered.add(b);
        } catch {
          unanswered.add(b); // the connection died with the process: never answered
        }
      }
    });
    await new Promise((r) => setTimeout(r, 2_000));
    service.child.kill('SIGKILL');
    killed = true;
    await service.exited;
    await Promise.all(senders);
    expect(acknowledged.size, 'batches answered before the kill').to.be.above(5);

    // Restarted on the same directory: unanswered batches are sent again, answered ones too (a
    // client that never saw its answer would): those are all duplicates.
    service = await startService(env);
    for (const b of unanswered) expect((await send(service, batchOf(b))).status).to.equal(200);
    for (const b of [...acknowledged].slice(0, 10)) {
      const again = await send(service, batchOf(b));
      expect(again.body, `batch ${b} acknowledged before the kill`).to.deep.equal({ ingested: 50, duplicates: 50, conflicts: 0, errors: [], warnings: [], alerts_created: 0 });
    }

    // A graceful restart, and a retry after it: still duplicates.
    service.child.kill('SIGTERM');
    expect(await service.exited).to.equal(0);
    service = await startService(env);
    const retried = await send(service, batchOf([...acknowledged][0]!));
    expect(retried.body).to.include({ duplicates: 50 });

    // Stored = every batch sent (acknowledged, or re-sent after the kill), each record once.
    const expected = new Set([...acknowledged, ...unanswered].flatMap((b) => batchOf(b).map((r) => r.id)));
    const stored = (await post(service, '/api/v1/audit/query', {})) as { id: string }[];
    const ids = stored.map((r) => r.id);
    expect(ids.length, 'no record twice').to.equal(new Set(ids).size);
    expect(new Set(ids)).to.deep.equal(expected);

    service.child.kill('SIGTERM');
    expect(await service.exited).to.equal(0);
    // Rollups = raw, with the server stopped (the embedded engine allows one process).
    const check = await run(process.execPath, [MAIN.replace('src/main.js', 'scripts/check-store.js'), '--data-dir', dataDir]);
    const result = JSON.parse(check.stdout) as { events: number; distinctIds: number; ok: boolean; rollups: Record<string, { equal: boolean }>; unloadedRecords: number };
    expect(result.events).to.equal(expected.size);
    expect(result.distinctIds).to.equal(expected.size);
    expect(result.unloadedRecords).to.equal(0);
    for (const [name, r] of Object.entries(result.rollups)) expect(r.equal, name).to.equal(true);
    expect(check.code).to.equal(0);
    // The retries above were judged against runs the worker wrote, not only level 0.
    const registry = new Database(path.join(dataDir, 'registry.db'), { readonly: true });
    const runs = registry.prepare('SELECT count(*) AS n, sum(rows) AS keys FROM ingest_runs').get() as { n: number; keys: number };
    registry.close();
    expect(runs.n, 'dedup runs written').to.be.above(0);
    expect(runs.keys).to.be.above(1000);
  });
});
