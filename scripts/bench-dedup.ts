/**
 * npm run bench:dedup -- [--ids-per-day 1000000] [--days 7]
 * npm run bench:dedup -- --candidates [--sizes 0,20000000,100000000] [--claims 1000000]
 *   (the candidate structures of scripts/dedup-candidates.ts side by side, instead)
 *
 * The ingest log's (team, id) index on a temporary registry: fills `days` day partitions with
 * `ids-per-day` SDK-shaped ids each (16 hex characters, team ids as the service makes them),
 * then claims a further day's worth in batches of 1,000 (as group commits do) and prints the
 * claim cost per id with that many older days to look in, the bytes per id on disk (SQLite's
 * dbstat: table and key, pages as stored) and how long expiring one day (DROP TABLE) takes.
 * Each id is claimed with a print as the group commit passes it (random 64 bits, as of a record
 * with a tx_hash; made beforehand: the cost of computing one is printed apart), and a day's ids
 * sent again (all duplicates: the path that reads stored prints) is timed too.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { contentPrint, IngestLog, type ContentPrint } from '../src/ingest/log.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { migrateRegistry } from '../src/stores/migrations.js';
import { openRegistry } from '../src/stores/sqlite.js';
import { measureCandidates } from './dedup-candidates.js';

const { values: args } = parseArgs({
  options: {
    'ids-per-day': { type: 'string', default: '1000000' },
    days: { type: 'string', default: '7' },
    candidates: { type: 'boolean', default: false },
    sizes: { type: 'string', default: '0,20000000,100000000' },
    claims: { type: 'string', default: '1000000' },
  },
});
const PER_DAY = Number(args['ids-per-day']);
const DAYS = Number(args.days);
const DAY = 86_400_000;
const BATCH = 1_000;
const TEAMS = Array.from({ length: 3 }, () => `team_${crypto.randomBytes(13).toString('hex').slice(0, 20)}`);

function main(): void {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-dedup-'));
  const db = openRegistry(dataDir);
  try {
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    const log = new IngestLog(db, DAYS);
    const today = Date.now();
    // As the group commit does: the transaction without fsync (the WAL is flushed off the main
    // thread), so this measures the index's own cost.
    db.pragma('synchronous = NORMAL');
    // Random 64-bit prints, as of records with a tx_hash (the larger row).
    const print = (): ContentPrint => ({ fp: crypto.randomBytes(8).readBigInt64BE(0).toString(), txHash: '0x' });
    let batches: { ids: string[]; prints: ContentPrint[] }[] = [];
    const claimAll = (day: number): number => {
      const started = performance.now();
      batches.forEach(({ ids, prints }, b) => db.transaction(() => log.claim(TEAMS[b % TEAMS.length]!, ids, day, prints))());
      return (performance.now() - started) / PER_DAY;
    };
    const fill = (day: number): number => {
      batches = Array.from({ length: Math.ceil(PER_DAY / BATCH) }, (_, b) => {
        const ids = Array.from({ length: Math.min(BATCH, PER_DAY - b * BATCH) }, () => crypto.randomBytes(8).toString('hex'));
        return { ids, prints: ids.map(print) };
      });
      return claimAll(day);
    };
    console.log(`(team, id) index: ${PER_DAY.toLocaleString('en-US')} ids a day, window ${DAYS} days, claims in batches of ${BATCH}`);
    const empty = fill(today - DAYS * DAY);
    for (let d = DAYS - 1; d >= 1; d--) fill(today - d * DAY);
    const full = fill(today);
    const partitions = log.partitionNames();
    const { bytes } = db.prepare('SELECT sum(pgsize) AS bytes FROM dbstat WHERE name = ?').get(partitions[0]) as { bytes: number };
    console.log(`claim cost per id: ${(empty * 1000).toFixed(2)} µs with no older day, ${(full * 1000).toFixed(2)} µs with ${partitions.length - 1} older days to look in`);
    console.log(`bytes per id on disk: ${(bytes / PER_DAY).toFixed(1)} (one day: ${(bytes / 1024 ** 2).toFixed(1)} MiB in ${partitions[0]})`);
    // Today's ids sent again: every one a duplicate, its stored print read and compared.
    const resent = claimAll(today);
    console.log(`claim cost per id sent again (all duplicates, stored prints read): ${(resent * 1000).toFixed(2)} µs`);
    const rows = Array.from({ length: 100_000 }, (_, i) => ({
      agent_id: `agent-${i % 50}`,
      endpoint: `https://api.example.com/v1/search?q=${i}`,
      amount: '0.001000',
      amount_raw: '0',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      network: 'eip155:8453',
      payee_address: '0x2222222222222222222222222222222222222222',
      tx_hash: `0x${crypto.randomBytes(32).toString('hex')}`,
    }));
    const printed = performance.now();
    for (const row of rows) contentPrint(row);
    console.log(`content print per SDK record (in the group commit, before the claim): ${(((performance.now() - printed) / rows.length) * 1000).toFixed(2)} µs`);
    // The next day: the oldest partition falls out of the window and is dropped whole.
    const oldest = partitions.at(-1)!;
    const started = performance.now();
    db.transaction(() => log.claim(TEAMS[0]!, ['next-day'], today + DAY))();
    const dropped = !log.partitionNames().includes(oldest);
    console.log(`expiring one day (DROP TABLE ${oldest}, ${PER_DAY.toLocaleString('en-US')} ids): ${(performance.now() - started).toFixed(0)} ms${dropped ? '' : ' (NOT dropped)'}`);
  } finally {
    db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (args.candidates) measureCandidates(args.sizes!.split(",").map(Number), Number(args.claims));
else main();
