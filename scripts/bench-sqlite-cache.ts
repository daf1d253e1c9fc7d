/**
 * npm run bench:sqlite-cache -- [--fill 60000] [--groups 3000]
 *
 * What a small commit costs the registry's connection as its page cache fills. A registry opened
 * as the service opens it (openRegistry: WAL, memory map), one table with a primary key and a
 * second index like the authorizations' (inserts in groups of 8 rows, ids at random, 200 agents),
 * under two page-cache sizes: the 256 MB the registry used before and the 16 MB it uses now.
 * Each size is measured on a fresh file, and again after writing `fill` pages of another table
 * first (what a long-running registry holds in its cache). SQLite's B-tree balancing renames a
 * page to the pending-byte page number for a moment; after that the commit's cache truncation
 * scans the whole cache, so a commit costs more the more pages are cached
 * (src/stores/sqlite.ts). Prints microseconds per commit of 8 rows, the median of five rounds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openRegistry } from '../src/stores/sqlite.js';
import { median } from './stats.js';

const { values: args } = parseArgs({
  options: {
    fill: { type: 'string', default: '60000' },
    groups: { type: 'string', default: '3000' },
  },
});
const FILL = Number(args.fill);
const GROUPS = Number(args.groups);
const CACHES: { label: string; kib: number }[] = [
  { label: '256 MB (before)', kib: 262_144 },
  { label: '16 MB (now)', kib: 16_384 },
];

function measure(kib: number, fill: number): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-sqlite-cache-'));
  const db = openRegistry(dir);
  try {
    db.pragma(`cache_size = -${kib}`);
    // As the group commit writes: synchronous=NORMAL, the WAL flushed apart (not measured here).
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, v BLOB)');
    db.exec('CREATE TABLE rows (id TEXT PRIMARY KEY, agent TEXT NOT NULL, at INTEGER NOT NULL)');
    db.exec('CREATE INDEX rows_by_agent ON rows (agent, at DESC)');
    // About one page per row: `fill` pages written, and kept in the cache as far as it holds them.
    const fillRow = db.prepare('INSERT INTO filler (v) VALUES (randomblob(3900))');
    db.transaction(() => {
      for (let i = 0; i < fill; i++) fillRow.run();
    })();
    const insert = db.prepare('INSERT INTO rows (id, agent, at) VALUES (?, ?, ?)');
    let n = 0;
    const group = db.transaction(() => {
      for (let i = 0; i < 8; i++, n++) insert.run(`auth_${Math.random().toString(36).slice(2)}`, `agent-${Math.floor(Math.random() * 200)}`, n);
    });
    for (let i = 0; i < GROUPS; i++) group();
    const rounds: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < GROUPS; i++) group();
      rounds.push(Number(process.hrtime.bigint() - t0) / 1000 / GROUPS);
    }
    return median(rounds);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`\nspendscope registry page cache, ${new Date().toISOString().slice(0, 10)}: µs per commit of 8 rows (median of 5 rounds of ${GROUPS.toLocaleString('en-US')})\n`);
console.log(`${'page cache'.padEnd(18)}${'fresh file'.padStart(14)}${`after ${FILL.toLocaleString('en-US')} pages`.padStart(22)}`);
for (const { label, kib } of CACHES) {
  const fresh = measure(kib, 0);
  const filled = measure(kib, FILL);
  console.log(`${label.padEnd(18)}${fresh.toFixed(1).padStart(14)}${filled.toFixed(1).padStart(22)}`);
}
