/**
 * npm run bench:start -- [--runs 5] [--root /other/worktree]
 *
 * How long the service takes to be ready, and the CPU that costs: `runs` times, a first start on
 * an empty data directory (stores created, migrations applied, the default team made) and a
 * restart on the same directory, each timed from spawn to the first 200 of GET /healthz. The
 * yardstick, started the same way in the same run: the bare Node server of scripts/null-server.ts,
 * what any Node service pays to start here. `--root`: the build of another worktree, for a
 * before/after run alternating with this one.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startChildService, startNullServer } from './service.js';
import { cpuSeconds, median } from './stats.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '5' }, root: { type: 'string' } } });
const RUNS = Number(args.runs);

function healthy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
  });
}

interface Start {
  ms: number;
  cpuS: number;
}

/** Spawn to ready: the service's first 200 of /healthz; its CPU seconds by then. */
async function startService(dataDir: string, root: string | undefined): Promise<Start> {
  const t0 = performance.now();
  const service = await startChildService({ dataDir, ...(root ? { root } : {}) });
  while (!(await healthy(service.port))) await new Promise((r) => setTimeout(r, 10));
  const ms = performance.now() - t0;
  const cpuS = cpuSeconds(service.pid);
  await service.stop();
  return { ms, cpuS };
}

async function startYardstick(): Promise<Start> {
  const t0 = performance.now();
  const server = await startNullServer('node');
  const ms = performance.now() - t0;
  const cpuS = cpuSeconds(server.pid);
  server.stop();
  return { ms, cpuS };
}

const builds: { label: string; root: string | undefined }[] = [{ label: 'this build', root: undefined }];
if (args.root) builds.push({ label: path.basename(args.root), root: args.root });
const results = new Map<string, { first: Start[]; restart: Start[] }>(builds.map((b) => [b.label, { first: [], restart: [] }]));
const yardstick: Start[] = [];

for (let run = 0; run < RUNS; run++) {
  yardstick.push(await startYardstick());
  // Alternating, so a slow minute of the machine falls on both builds.
  for (const build of run % 2 ? [...builds].reverse() : builds) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-start-'));
    try {
      results.get(build.label)!.first.push(await startService(dataDir, build.root));
      results.get(build.label)!.restart.push(await startService(dataDir, build.root));
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

const row = (label: string, starts: Start[], base: Start[]) => {
  const ms = median(starts.map((s) => s.ms));
  const cpu = median(starts.map((s) => s.cpuS));
  console.log(
    `${label.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms  ${cpu.toFixed(2).padStart(5)} s CPU  ${(ms / median(base.map((s) => s.ms))).toFixed(1).padStart(5)} × the yardstick`,
  );
};
console.log(`Start to ready, medians of ${RUNS} runs (ms from spawn to the first 200 of /healthz; the CPU of the process by then)\n`);
row('yardstick: bare Node server', yardstick, yardstick);
for (const build of builds) {
  row(`${build.label}: first start`, results.get(build.label)!.first, yardstick);
  row(`${build.label}: restart`, results.get(build.label)!.restart, yardstick);
}
