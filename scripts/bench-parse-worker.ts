/**
 * npm run bench:parse-worker -- [--batches 3000] [--rounds 5]
 *
 * Would parsing, validation and TSV encoding of ingest batches be cheaper off the event loop?
 * Measures, per record of SDK-shaped batches of 100, in one process:
 * - inline: what the event loop does today (the raw body's scan, JSON.parse, recordToRow, rowToTsv);
 * - with a worker thread doing that work: the main thread's CPU (post the body, receive the rows
 *   and their TSV lines), the worker's CPU, and their sum;
 * - the structured clone alone: serialising a batch's result (in the worker) and deserialising it
 *   (on the main thread).
 * On a machine whose cores are already busy (2 cores: the engine, the dedup and GC threads beside
 * the loop), what counts is the sum: the clone is work that the inline path does not do.
 * Medians of the rounds.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { scanShapeProblem, type ScanFacts } from '../src/http/body-shape.js';
import { SchemaRegistry } from '../src/http/validation.js';
import { recordToRow, type EventRow } from '../src/ingest/records.js';
import { rowToTsv } from '../src/ingest/tsv.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { median } from './stats.js';

const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));

/** What the event loop does with a batch before the group commit. */
function parseBatch(body: Buffer): { rows: EventRow[]; tsv: string[] } {
  const facts: ScanFacts = { plain: false };
  if (scanShapeProblem(body, facts)) throw new Error('the scan refused a benchmark body');
  const { events } = JSON.parse(body.toString('utf8')) as { events: unknown[] };
  const now = Date.now();
  const rows: EventRow[] = [];
  const tsv: string[] = [];
  for (const record of events) {
    const outcome = recordToRow(record, schemas, 'team-bench', 'events', now, {}, facts.plain);
    if (outcome.ok) {
      rows.push(outcome.row);
      tsv.push(rowToTsv(outcome.row, 0));
    }
  }
  return { rows, tsv };
}

/** CPU milliseconds of the calling thread so far (Linux). */
function threadCpuMs(): number {
  const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

if (!isMainThread) {
  parentPort!.on('message', (message: Uint8Array | 'cpu') => {
    if (message === 'cpu') parentPort!.postMessage({ cpuMs: threadCpuMs() });
    else parentPort!.postMessage(parseBatch(Buffer.from(message)));
  });
} else {
  const { values: args } = parseArgs({ options: { batches: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '5' } } });
  const BATCHES = Number(args.batches);
  const ROUNDS = Number(args.rounds);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
  const record = () => {
    const createdAt = Date.now() - Math.floor(Math.random() * 3_600_000);
    return {
      id: crypto.randomBytes(8).toString('hex'), agent_id: `agent-${Math.floor(Math.random() * 200)}`, team: pick(['research', 'ops', null]),
      human_sponsor: null, amount: (Math.floor(Math.random() * 50_000 + 1) / 1e6).toFixed(6), amount_raw: '0',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', network: 'eip155:8453', scheme: 'exact', tx_hash: `0x${crypto.randomBytes(8).toString('hex')}`,
      payer_address: '0x1111111111111111111111111111111111111111', payee_address: '0x2222222222222222222222222222222222222222', facilitator: null,
      endpoint: `https://svc${Math.floor(Math.random() * 40)}.example.com/api/v1/resource/1`, method: 'POST', status_code: 200,
      response_time_ms: Math.floor(Math.random() * 800), policy_id: null, policy_evaluation: pick(['allowed', 'allowed', 'flagged', 'blocked']),
      budget_remaining: null, task_id: null, session_id: null, metadata: { run: 'bench' }, created_at: createdAt, settled_at: createdAt,
      tags: pick([[], ['research'], ['ops', 'batch']]),
    };
  };
  const bodies = Array.from({ length: 200 }, () => Buffer.from(JSON.stringify({ events: Array.from({ length: 100 }, record) })));
  const records = BATCHES * 100;
  const worker = new Worker(new URL(import.meta.url));
  const ask = <T>(message: unknown): Promise<T> => new Promise((resolve) => { worker.once('message', resolve); worker.postMessage(message); });
  /** Sends every batch to the worker, 16 in flight (as 16 clients would), until all came back. */
  const throughWorker = () =>
    new Promise<void>((done) => {
      let sent = 0;
      let received = 0;
      const onResult = () => {
        if (++received === BATCHES) {
          worker.off('message', onResult);
          done();
        } else if (sent < BATCHES) worker.postMessage(bodies[sent++ % bodies.length]);
      };
      worker.on('message', onResult);
      for (let i = 0; i < 16; i++) worker.postMessage(bodies[sent++ % bodies.length]);
    });
  const sample = parseBatch(bodies[0]!);
  const serialized = v8.serialize(sample);
  const perRecord = (ms: number, n = records) => (ms * 1000) / n;
  const rounds: Record<string, number[]> = { inline: [], main: [], worker: [], sum: [], serialize: [], deserialize: [] };
  for (let i = 0; i < 300; i++) parseBatch(bodies[i % bodies.length]!); // warm up both threads
  await throughWorker();
  for (let round = 0; round < ROUNDS; round++) {
    let cpu = threadCpuMs();
    for (let i = 0; i < BATCHES; i++) parseBatch(bodies[i % bodies.length]!);
    rounds.inline!.push(perRecord(threadCpuMs() - cpu));
    cpu = threadCpuMs();
    const workerBefore = (await ask<{ cpuMs: number }>('cpu')).cpuMs;
    await throughWorker();
    rounds.main!.push(perRecord(threadCpuMs() - cpu));
    rounds.worker!.push(perRecord((await ask<{ cpuMs: number }>('cpu')).cpuMs - workerBefore));
    rounds.sum!.push(rounds.main!.at(-1)! + rounds.worker!.at(-1)!);
    let started = performance.now();
    for (let i = 0; i < BATCHES; i++) v8.serialize(sample);
    rounds.serialize!.push(perRecord(performance.now() - started));
    started = performance.now();
    for (let i = 0; i < BATCHES; i++) v8.deserialize(serialized);
    rounds.deserialize!.push(perRecord(performance.now() - started));
  }
  await worker.terminate();
  const fmt = (name: string) => median(rounds[name]!).toFixed(2);
  console.log(`scan, parse, validate and TSV-encode ${BATCHES} batches of 100 SDK-shaped records; medians of ${ROUNDS} rounds, CPU µs per record`);
  console.log(`  inline, on the event loop:                 ${fmt('inline')}`);
  console.log(`  with a worker thread: event loop           ${fmt('main')}  (post the body, receive rows and TSV: ${(serialized.length / 100).toFixed(0)} bytes per record)`);
  console.log(`                        worker               ${fmt('worker')}`);
  console.log(`                        both                 ${fmt('sum')}  (${(median(rounds.sum!) / median(rounds.inline!)).toFixed(2)} x inline)`);
  console.log(`  the clone alone: serialise ${fmt('serialize')}, deserialise ${fmt('deserialize')}`);
}
