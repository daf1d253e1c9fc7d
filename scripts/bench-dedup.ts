/**
 * npm run bench:dedup -- [--ids-per-day 1000000] [--days 7]
 *
 * The ingest log's (team, id) index (src/ingest/dedup) on a temporary registry: claims `days` days
 * of `ids-per-day` SDK-shaped ids each (16 hex characters, team ids as the service makes them) in
 * batches of 1,000 (as group commits do), letting the worker write and merge the runs after each
 * day, then claims a further day's worth and prints the claim cost per id with that many older
 * days to look in: the main thread's time, and the whole process's CPU (the worker's runs
 * included). Then the bytes per id on disk (run files and level-0 tables), a day's ids sent again
 * (all duplicates: the path that reads stored prints), and what expiring one day takes.
 * Each id is claimed with a print as the group commit passes it (random 64 bits, as of a record
 * with a tx_hash; made beforehand: the cost of computing one is printed apart).
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
import { runFolder } from '../src/ingest/dedup/index.js';

const { values: args } = parseArgs({
  options: {
    'ids-per-day': { type: 'string', default: '1000000' },
    days: { type: 'string', default: '7' },
  },
});
const PER_DAY = Number(args['ids-per-day']);
const DAYS = Number(args.days);
const DAY = 86_400_000;
const BATCH = 1_000;
const TEAMS = Array.from({ length: 3 }, () => `team_${crypto.randomBytes(13).toString('hex').slice(0, 20)}`);

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-dedup-'));
  const db = openRegistry(dataDir);
  const log = (() => {
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    return new IngestLog(db, DAYS);
  })();
  try {
    const today = Date.now();
    // As the group commit does: the transaction without fsync (the WAL is flushed off the main
    // thread), so this measures the index's own cost.
    db.pragma('synchronous = NORMAL');
    // Random 64-bit prints, as of records with a tx_hash (the larger row).
    const print = (): ContentPrint => ({ fp: crypto.randomBytes(8).readBigInt64BE(0).toString(), txHash: '0x' });
    let batches: { ids: string[]; prints: ContentPrint[] }[] = [];
    /** Claims the batches at `day`, then waits for the runs: µs per id of the main thread and of the process's CPU. */
    const claimAll = async (day: number): Promise<{ main: number; cpu: number }> => {
      const cpu = process.cpuUsage();
      let busy = 0;
      for (const [b, { ids, prints }] of batches.entries()) {
        const t0 = performance.now();
        db.transaction(() => log.claim(TEAMS[b % TEAMS.length]!, ids, day, prints))();
        busy += performance.now() - t0;
        // Let the index register finished runs between groups, as the event loop does.
        if (b % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
      }
      await log.settled();
      const used = process.cpuUsage(cpu);
      return { main: (busy * 1000) / PER_DAY, cpu: (used.user + used.system) / PER_DAY };
    };
    const fill = (day: number) => {
      batches = Array.from({ length: Math.ceil(PER_DAY / BATCH) }, (_, b) => {
        const ids = Array.from({ length: Math.min(BATCH, PER_DAY - b * BATCH) }, () => crypto.randomBytes(8).toString('hex'));
        return { ids, prints: ids.map(print) };
      });
      return claimAll(day);
    };
    const fmt = (c: { main: number; cpu: number }) => `${c.main.toFixed(2)} µs on the main thread, ${c.cpu.toFixed(2)} µs of process CPU`;
    console.log(`(team, id) index: ${PER_DAY.toLocaleString('en-US')} ids a day, window ${DAYS} days, claims in batches of ${BATCH}`);
    const empty = await fill(today - DAYS * DAY);
    for (let d = DAYS - 1; d >= 1; d--) await fill(today - d * DAY);
    const full = await fill(today);
    const held = log.index.describe();
    console.log(`claim cost per id: ${fmt(empty)} with no older day; ${fmt(full)} with ${DAYS} older days to look in`);
    const todays = held.runs.filter((r) => r.day === held.runs.at(-1)!.day);
    const runBytes = todays.reduce((n, r) => n + fs.statSync(path.join(runFolder(db), r.file)).size, 0);
    console.log(
      `bytes per id on disk: ${(runBytes / PER_DAY).toFixed(1)} (one day: ${(runBytes / 1024 ** 2).toFixed(1)} MiB in ${todays.length} runs; ${held.runs.length} runs in all, levels ${held.runs.map((r) => r.level).join(',')})`,
    );
    // Today's ids sent again: every one a duplicate, its stored print read and compared.
    const probes = log.index.probes;
    const resent = await claimAll(today);
    console.log(`claim cost per id sent again (all duplicates, stored prints read): ${fmt(resent)}; ${((log.index.probes - probes) / PER_DAY).toFixed(2)} run probes per id`);
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
    // The next day: the oldest day falls out of the window and is dropped whole (its run files unlinked).
    const oldest = held.runs[0]!.day;
    const started = performance.now();
    db.transaction(() => log.claim(TEAMS[0]!, ['next-day'], today + DAY, [print()]))();
    await log.settled();
    const dropped = !log.index.describe().runs.some((r) => r.day === oldest);
    console.log(`expiring one day (${oldest}, ${PER_DAY.toLocaleString('en-US')} ids): ${(performance.now() - started).toFixed(0)} ms${dropped ? '' : ' (NOT dropped)'}`);
  } finally {
    log.stop();
    db.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
