/**
 * npm run bench:dashboard -- [--data-dir DIR] [--events 10000000] [--loads 15] [--screenshot FILE]
 *
 * How fast the dashboard's overview shows a large store. On a store seeded with N events (a
 * temporary one seeded now, unless --data-dir names one seeded before with `npm run seed`), starts
 * the service and opens the overview in Chromium (Debian's, through playwright-core) as the team
 * with the most events, for each range preset: `loads` page loads each, timed from navigation
 * start until every panel shows its answer. Also prints the slowest panel request of each load
 * (the panels' requests go out at once, so the page is as slow as its slowest), and the first
 * page's size, gzipped, as the service sends it. --screenshot saves the 30-day overview at 1280 px
 * to FILE.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { DASHBOARD_DIR } from '../src/dashboard/page.js';
import { benchmarkStore, largestTeam } from './seed.js';
import { startChildService } from './service.js';
import { median, percentile } from './stats.js';

const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    events: { type: 'string', default: '10000000' },
    loads: { type: 'string', default: '15' },
    screenshot: { type: 'string' },
  },
});
const LOADS = Number(args.loads);
const PRESETS = ['24h', '7d', '30d', '90d'];


/** Bytes of the first page gzipped: the HTML and every asset it names. */
function firstPageBytes(): { raw: number; gzipped: number } {
  const html = fs.readFileSync(path.join(DASHBOARD_DIR, 'index.html'));
  let raw = html.length;
  let gzipped = zlib.gzipSync(html, { level: 9 }).length;
  for (const [, url] of html.toString().matchAll(/(?:src|href)="\/dashboard\/(assets\/[^"]+)"/g)) {
    const body = fs.readFileSync(path.join(DASHBOARD_DIR, url!));
    raw += body.length;
    gzipped += zlib.gzipSync(body, { level: 9 }).length;
  }
  return { raw, gzipped };
}

async function main(): Promise<void> {
  const { dataDir, cleanUp } = await benchmarkStore('bench-dashboard', args['data-dir'], Number(args.events));
  const top = await largestTeam(dataDir, { name: 'bench-dashboard', scopes: ['read'] });
  const apiKey = top.apiKey;

  const size = firstPageBytes();
  console.log(
    `\nspendscope dashboard benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, embedded ClickHouse, ` +
      `${top.total.toLocaleString('en-US')} events in the store, the team shown holds ${top.events.toLocaleString('en-US')}; ` +
      `Chromium on the same machine; ${LOADS} loads per range`,
  );
  console.log(`first page: ${(size.gzipped / 1024).toFixed(1)} KB gzipped (${(size.raw / 1024).toFixed(1)} KB as built), budget 250 KB\n`);

  const service = await startChildService({ dataDir });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const base = `http://127.0.0.1:${service.port}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/`);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    console.log('overview range   loads   all panels shown: p50 ms   p95 ms   slowest panel request: p50 ms   panels');
    for (const preset of PRESETS) {
      const shown: number[] = [];
      const slowest: number[] = [];
      let panels = 0;
      // One load first, not counted: the engine's and the browser's caches start warm for every range alike.
      for (let i = 0; i <= LOADS; i++) {
        await page.goto(`${base}/dashboard/?range=${preset}`);
        await page.waitForFunction(() => {
          const all = document.querySelectorAll('section.panel[data-panel]');
          return all.length >= 7 && [...all].every((p) => p.getAttribute('data-state') === 'ready');
        }, undefined, { timeout: 60_000, polling: 'raf' });
        const timing = await page.evaluate(() => ({
          now: performance.now(),
          panels: document.querySelectorAll('section.panel[data-panel]').length,
          api: performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/')).map((e) => (e as PerformanceResourceTiming).responseEnd - e.startTime),
        }));
        if (i === 0) continue;
        shown.push(timing.now);
        slowest.push(Math.max(...timing.api));
        panels = timing.panels;
      }
      if (preset === '30d' && args.screenshot) await page.screenshot({ path: args.screenshot, fullPage: true });
      shown.sort((a, b) => a - b);
      console.log(
        `${preset.padEnd(14)} ${String(LOADS).padStart(7)} ${percentile(shown, 50).toFixed(0).padStart(27)} ${percentile(shown, 95).toFixed(0).padStart(8)}` +
          ` ${median(slowest).toFixed(0).padStart(31)} ${String(panels).padStart(8)}`,
      );
    }
  } finally {
    await browser.close();
    await service.stop();
    cleanUp();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
