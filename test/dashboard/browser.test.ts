/**
 * The dashboard in a real browser (Chromium through playwright-core) against the real service and
 * stores of the test run, on a store seeded through the API. Each page is photographed at 1280 px
 * and on a 390 px phone screen under test-output/dashboard, and each photo is checked for a render.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { api, newTeam } from '../helpers/context.js';
import { launchBrowser, listenOnce, renderStats, SCREENSHOT_DIR, VIEWPORTS } from '../helpers/browser.js';

const HOUR = 3_600_000;
const AGENTS = ['research-bot', 'travel-agent', 'code-helper'];
const ENDPOINTS = ['https://api.openai.com/v1/chat', 'https://api.anthropic.com/v1/messages', 'https://search.example.com/q'];

describe('dashboard in a browser', function () {
  this.timeout(120_000);
  let browser: Browser;
  let server: { url: string; close: () => Promise<void> };
  let team: ReturnType<typeof newTeam>;
  /** The seeded records span [from, to): a custom range the tests open the overview with. */
  const to = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const from = to - 72 * HOUR;

  before(async () => {
    browser = await launchBrowser();
    server = await listenOnce();
    team = newTeam('dashboard');
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (let batch = 0; batch < 3; batch++) {
      const events = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        return {
          id: `dash-${n}`,
          agent_id: AGENTS[n % 3],
          endpoint: ENDPOINTS[(n >> 1) % 3],
          method: 'POST',
          // Amounts with many decimals: the page must show them exactly.
          amount: `${n % 7}.${String((n * 104_729) % 1_000_000).padStart(6, '0')}`,
          network: n % 2 ? 'eip155:8453' : 'solana:mainnet',
          category: n % 2 ? 'llm' : 'search',
          policy_evaluation: n % 25 === 0 ? 'blocked' : n % 10 === 0 ? 'flagged' : 'allowed',
          created_at: from + Math.floor((n * (to - from)) / 300),
        };
      });
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    }
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function newPage(viewport: keyof typeof VIEWPORTS): Promise<Page> {
    const page = await browser.newPage({ viewport: VIEWPORTS[viewport] });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (message) => message.type() === 'error' && !/status of 40[0-9]/.test(message.text()) && problems.push(message.text()));
    (page as Page & { problems: string[] }).problems = problems;
    return page;
  }

  /** Signs in at /; with the team's key, waits until the dashboard shows. */
  async function signIn(page: Page, key = team.apiKey): Promise<void> {
    await page.goto(`${server.url}/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    if (key === team.apiKey) await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  /** Photographs the page as it is, and checks the photo is a render: not one colour. */
  async function photograph(page: Page, name: string): Promise<void> {
    const png = await page.screenshot({ fullPage: true, path: path.join(SCREENSHOT_DIR, `${name}.png`) });
    const stats = renderStats(png);
    expect(stats.inkShare, `${name}: share of non-background pixels`).to.be.greaterThan(0.02);
    expect(stats.colours, `${name}: distinct colours`).to.be.greaterThan(20);
  }

  const overviewUrl = () => `${server.url}/dashboard/?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;

  it('a wrong key is told so, and nothing is kept', async () => {
    const page = await newPage('wide');
    await signIn(page, 'ss_not_a_key_of_anyone_0000000000');
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
    expect(await page.getByRole('button', { name: 'Sign in' }).isVisible()).to.equal(true);
    await photograph(page, 'sign-in-wrong-key-wide');
    await page.close();
  });

  it('sign in; the overview shows the totals GET /analytics/summary gives for the range, exactly, and one chart point per bucket', async () => {
    for (const viewport of ['wide', 'phone'] as const) {
      const page = await newPage(viewport);
      await signIn(page);
      await page.locator('[data-panel=totals][data-state=ready]').waitFor();
      // The key stays in the tab's session storage, never in the URL or a cookie.
      expect(page.url()).to.not.include(team.apiKey);
      expect(await page.context().cookies()).to.deep.equal([]);
      expect(await page.evaluate(() => Object.values(sessionStorage))).to.include(team.apiKey);

      await page.goto(overviewUrl());
      await page.locator('[data-panel=totals][data-state=ready]').waitFor();
      const summary = (await api().get('/api/v1/analytics/summary').query({ from, to }).set(...team.auth).expect(200)).body;
      const figure = (field: string) => page.locator(`[data-field=${field}] .value`).textContent();
      const grouped = (amount: string) => {
        const [whole, fraction = ''] = amount.split('.');
        return `${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${fraction.padEnd(2, '0')}`;
      };
      expect(summary.count).to.equal(300);
      expect(await figure('totalSpend')).to.equal(grouped(summary.totalSpend));
      expect(await figure('count')).to.equal(String(summary.count));
      expect(await figure('avgPayment')).to.equal(grouped(summary.avgPayment));
      expect(await figure('maxPayment')).to.equal(grouped(summary.maxPayment));
      expect(await figure('activeAgents')).to.equal(String(summary.activeAgents));
      expect(await figure('flagged')).to.equal(String(summary.flagged));
      expect(await figure('blocked')).to.equal(String(summary.blocked));

      await page.locator('[data-panel=timeseries][data-state=ready]').waitFor();
      const zone = await page.locator('.zone select').inputValue();
      const series = (await api().get('/api/v1/analytics/timeseries').query({ from, to, granularity: 'hour', tz: zone }).set(...team.auth).expect(200)).body;
      expect(series.length).to.equal(72);
      expect(await page.locator('[data-panel=timeseries] [data-points]').getAttribute('data-points')).to.equal(String(series.length));
      // uPlot drew the series: its canvas is there and sized.
      expect(await page.locator('[data-panel=timeseries] canvas').count()).to.be.greaterThan(0);

      for (const panel of ['agents', 'endpoints', 'categories', 'networks', 'open-alerts']) {
        await page.locator(`[data-panel=${panel}][data-state=ready]`).waitFor();
      }
      const topAgent = (await api().get('/api/v1/analytics/by-agent').query({ from, to, limit: 1 }).set(...team.auth).expect(200)).body[0];
      const firstRow = page.locator('[data-panel=agents] tbody tr').first();
      expect(await firstRow.locator('td').nth(0).textContent()).to.equal(topAgent.key);
      expect(await firstRow.locator('td').nth(1).textContent()).to.equal(grouped(topAgent.spend));
      await photograph(page, `overview-${viewport}`);
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }
  });

  it('the range picker and the endpoint level change what the panels ask for', async () => {
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(overviewUrl());
    await page.locator('[data-panel=endpoints][data-state=ready]').waitFor();
    expect(await page.locator('[data-panel=endpoints] tbody tr').first().locator('td').first().textContent()).to.not.include('/');
    await page.getByRole('button', { name: 'URL' }).click();
    await page.locator('[data-panel=endpoints] tbody td', { hasText: 'https://' }).first().waitFor();
    await page.getByRole('button', { name: '7 days' }).click();
    await page.waitForURL(/range=7d/);
    await page.locator('[data-panel=timeseries][data-state=ready]').waitFor();
    expect(await page.locator('[data-panel=timeseries] h2').textContent()).to.equal('Spend over time, by hour');
    await page.getByRole('button', { name: '90 days' }).click();
    await page.locator('[data-panel=timeseries] h2', { hasText: 'by day' }).waitFor();
    expect(await page.locator('[data-panel=timeseries] [data-points]').getAttribute('data-points')).to.be.oneOf(['90', '91']);
    await page.close();
  });

  it('sign-out forgets the key', async () => {
    const page = await newPage('phone');
    await signIn(page);
    await page.locator('[data-panel=totals][data-state=ready]').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
    // Going back to a page of the dashboard asks for a key again.
    await page.goto(overviewUrl());
    await page.getByLabel('API key').waitFor();
    await photograph(page, 'sign-in-phone');
    await page.close();
  });
});
