/**
 * The dashboard in a real browser (Chromium through playwright-core) against the real service and
 * stores of the test run, on a store seeded through the API. Each page is photographed at 1280 px
 * and on a 390 px phone screen under test-output/dashboard, and each photo is checked for a render;
 * the docs' screenshots (docs/images) are taken from the same seeded install, so they stay current.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { bearer, keyWith, newPolicy, sleep, type PolicyBody, type Team } from '../helpers/common.js';
import { api, listenOnce, newTeam } from '../helpers/context.js';
import { DOCS_IMAGE_DIR, launchBrowser, renderStats, SCREENSHOT_DIR, VIEWPORTS } from '../helpers/browser.js';

const HOUR = 3_600_000;
const AGENTS = ['research-bot', 'travel-agent', 'code-helper', 'support-bot'];
const ENDPOINTS = ['https://api.openai.com/v1/chat', 'https://api.anthropic.com/v1/messages', 'https://search.example.com/q', 'https://flights.example.com/v2/offers'];
const BASE = 'eip155:8453';
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const RECORDS = 300;

/** Micro-USDC as a decimal string, built from integers (money never passes through a float). */
const usdc = (micro: number) => `${Math.floor(micro / 1_000_000)}.${String(micro % 1_000_000).padStart(6, '0')}`;

/**
 * Record n of the seeded install: deterministic, and like real traffic: small paid calls of a few
 * cents in USDC on Base or Solana, now and then a larger one (which breaks the per-payment cap and
 * stands out as a spike), the client's own verdict on some.
 */
function seededRecord(n: number, from: number, to: number) {
  const large = n % 37 === 36;
  const micro = large ? 1_200_000 + ((n * 7919) % 900_000) : 2_000 + ((n * 104_729) % 48_000);
  return {
    id: `dash-${n}`,
    agent_id: AGENTS[n % AGENTS.length],
    endpoint: ENDPOINTS[(n >> 1) % ENDPOINTS.length],
    method: 'POST',
    amount: usdc(micro),
    asset: 'USDC',
    network: n % 3 === 0 ? SOLANA : BASE,
    category: n % 2 ? 'llm' : 'search',
    policy_evaluation: n % 25 === 0 ? 'blocked' : n % 10 === 0 ? 'flagged' : 'allowed',
    created_at: from + Math.floor((n * (to - from)) / RECORDS),
  };
}

/** Policies of the seeded install, made before its records so the records are evaluated against them. */
const SEEDED_POLICIES: PolicyBody[] = [
  { name: 'Research daily budget', agents: ['research-bot'], limits: [{ kind: 'daily', amount: '0.50' }], action: 'flag' },
  { name: 'Per-payment cap', agents: [], limits: [{ kind: 'per_call', amount: '1.50' }], action: 'block' },
  { name: 'Travel hourly ceiling', agents: ['travel-agent'], limits: [{ kind: 'per_hour', amount: '2.00' }, { kind: 'daily', amount: '20.00' }], action: 'flag' },
];

/**
 * Whether a shown amount is the exact one rounded: digits grouped, at most half a unit of its last
 * digit away. Checked with BigInt, not by formatting again the way the page does.
 */
function isRoundingOf(shown: string, exact: string): boolean {
  const match = /^([\d,]+)\.(\d{2,8})$/.exec(shown);
  if (!match || !/^\d{1,3}(,\d{3})*$/.test(match[1]!)) return false;
  const places = match[2]!.length;
  const [whole, fraction = ''] = exact.split('.');
  const scale = Math.max(places, fraction.length);
  const exactUnits = BigInt(whole! + fraction.padEnd(scale, '0'));
  const shownUnits = BigInt(match[1]!.replace(/,/g, '') + match[2]!.padEnd(scale, '0'));
  const diff = exactUnits > shownUnits ? exactUnits - shownUnits : shownUnits - exactUnits;
  return diff * 2n <= 10n ** BigInt(scale - places);
}

/** The instant format of the whole dashboard ("24 Nov 2026, 05:59"), its parts, and the relative times. */
const INSTANT = /^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}$/;
const TIME_TEXT = /^(\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}|\d{2}:\d{2}|just now|\d{1,2} min ago|\d{1,2} h ago)$/;
/** Formats the dashboard must not show: ISO 8601, slashed dates, 12-hour clocks. */
const OTHER_DATE_FORMATS = [/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/, /\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/, /\b\d{1,2}(:\d{2})?\s?[ap]m\b/i];

describe('dashboard in a browser', function () {
  this.timeout(120_000);
  let browser: Browser;
  let server: { url: string; close: () => Promise<void> };
  let team: Team;
  /** The seeded records span [from, to): a custom range the tests open the overview with. */
  const to = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const from = to - 72 * HOUR;
  /** An approved authorization of the seeded install, holding its amount. */
  let seededAuthorizationId: string;

  before(async () => {
    browser = await launchBrowser();
    server = await listenOnce();
    team = await newTeam('dashboard');
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (const policy of SEEDED_POLICIES) await newPolicy(team, policy);
    for (let batch = 0; batch < 3; batch++) {
      const events = Array.from({ length: RECORDS / 3 }, (_, i) => seededRecord(batch * (RECORDS / 3) + i, from, to));
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    }
    // Authorizations under every limit (no alert comes of them): one holding its amount, one voided.
    const ask = (amount: string) => ({ agent_id: 'support-bot', endpoint: ENDPOINTS[2], amount, asset: 'USDC', network: BASE, expires_in_s: 3600 });
    seededAuthorizationId = (await api().post('/api/v1/authorizations').set(...team.auth).send(ask('0.25')).expect(200)).body.id;
    const voided = (await api().post('/api/v1/authorizations').set(...team.auth).send(ask('0.05')).expect(200)).body.id;
    await api().post(`/api/v1/authorizations/${voided}/void`).set(...team.auth).expect(200);
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

  /** Signs in at /; unless the key is to be refused, waits until the dashboard shows. */
  async function signIn(page: Page, key = team.apiKey, { accepted = true } = {}): Promise<void> {
    await page.goto(`${server.url}/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    if (accepted) await page.getByRole('button', { name: 'Sign out' }).waitFor();
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
    await signIn(page, 'ss_not_a_key_of_anyone_0000000000', { accepted: false });
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
    expect(await page.getByRole('button', { name: 'Sign in' }).isVisible()).to.equal(true);
    await photograph(page, 'sign-in-wrong-key-wide');
    await page.close();
  });

  it('sign in; the overview shows the totals GET /analytics/summary gives for the range, rounded with their asset and exact beside them, and one chart point per bucket', async () => {
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
      expect(summary.count).to.equal(RECORDS);
      // What the range's amounts are in comes with its own request.
      await page.locator('[data-field=totalSpend] .money .asset').waitFor();
      // Each amount: rounded by magnitude, with its asset, every digit of the API's string kept beside it.
      for (const field of ['totalSpend', 'avgPayment', 'maxPayment'] as const) {
        const money = page.locator(`[data-field=${field}] .money`);
        expect(await money.getAttribute('data-exact'), field).to.equal(summary[field]);
        const text = (await money.textContent())!;
        expect(text, field).to.match(/ USDC$/);
        expect(isRoundingOf(text.replace(/ USDC$/, ''), summary[field]), `${field}: ${text} rounds ${summary[field]}`).to.equal(true);
      }
      // The value, in the team currency, first.
      const value = page.locator('[data-field=totalValue] .money');
      expect(await value.getAttribute('data-exact')).to.equal(summary.totalValue);
      expect(await value.textContent()).to.match(/ USD$/);
      expect(summary.unvalued).to.equal(0);
      // The average has 18 decimals: shown as cents, in full in the tooltip.
      expect(summary.avgPayment.split('.')[1]).to.have.length.greaterThan(8);
      expect(await page.locator('[data-field=avgPayment] .money').getAttribute('title')).to.include(summary.avgPayment.split('.')[1]!);
      expect(await figure('count')).to.equal(String(summary.count));
      expect(await figure('activeAgents')).to.equal(String(summary.activeAgents));
      expect(await figure('flagged')).to.equal(String(summary.flagged));
      expect(await figure('blocked')).to.equal(String(summary.blocked));

      await page.locator('[data-panel=timeseries][data-state=ready]').waitFor();
      const zone = await page.locator('.zone select').inputValue();
      const series = (await api().get('/api/v1/analytics/timeseries').query({ from, to, granularity: 'hour', tz: zone }).set(...team.auth).expect(200)).body;
      expect(series.length).to.equal(72);
      expect(await page.locator('[data-panel=timeseries] [data-points]').getAttribute('data-points')).to.equal(String(series.length));
      // Until the cursor points somewhere, the legend shows the latest bucket, not dashes.
      const legend = page.locator('[data-panel=timeseries] .chart-legend');
      expect(await legend.getAttribute('data-legend')).to.equal('latest');
      expect(await legend.locator('time').getAttribute('datetime')).to.equal(series[series.length - 1].t);
      expect(await legend.locator('.money').getAttribute('data-exact')).to.equal(series[series.length - 1].spend);
      expect(await legend.textContent()).to.not.match(/--|–/);
      // uPlot drew the series: its canvas is there and sized.
      expect(await page.locator('[data-panel=timeseries] canvas').count()).to.be.greaterThan(0);

      for (const panel of ['agents', 'endpoints', 'categories', 'networks', 'open-alerts']) {
        await page.locator(`[data-panel=${panel}][data-state=ready]`).waitFor();
      }
      const topAgent = (await api().get('/api/v1/analytics/by-agent').query({ from, to, limit: 1 }).set(...team.auth).expect(200)).body[0];
      const firstRow = page.locator('[data-panel=agents] tbody tr').first();
      await firstRow.locator('.money .asset').waitFor();
      expect(await firstRow.locator('td').nth(0).textContent()).to.equal(topAgent.key);
      const topSpend = (await firstRow.locator('td').nth(1).textContent())!;
      expect(topSpend).to.match(/ USDC$/);
      expect(isRoundingOf(topSpend.replace(/ USDC$/, ''), topAgent.spend), `${topSpend} rounds ${topAgent.spend}`).to.equal(true);
      // Networks by name, the CAIP-2 id beside them.
      const networks = await page.locator('[data-panel=networks] [data-network]').evaluateAll((els) => els.map((e) => [e.getAttribute('data-network'), e.firstChild?.textContent?.trim()]));
      expect(networks).to.have.deep.members([
        [BASE, 'Base'],
        [SOLANA, 'Solana'],
      ]);
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
    // The heading follows the range at once; the points follow when the new answer arrives.
    await page.locator('[data-panel=timeseries][data-state=ready] [data-points="90"], [data-panel=timeseries][data-state=ready] [data-points="91"]').waitFor();
    expect(await page.locator('[data-panel=timeseries] [data-points]').getAttribute('data-points')).to.be.oneOf(['90', '91']);
    await page.close();
  });

  /** Waits until no panel of the page is loading. */
  async function settled(page: Page): Promise<void> {
    await page.locator('section.panel').first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll('section.panel[data-state=loading]').length === 0);
  }

  it("an agent's page: its all-time figures first and apart, then what the range bar governs (totals, spend over time, endpoints), and its alerts, as the API gives them", async () => {
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(overviewUrl());
    await page.locator('[data-panel=agents] tbody a').first().click();
    await page.waitForURL(/\/dashboard\/agents\/[^/?]+/);
    const agentId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
    expect(AGENTS).to.include(agentId);
    await page.goto(`${server.url}/dashboard/agents/${agentId}?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`);
    await settled(page);
    const agent = (await api().get(`/api/v1/agents/${agentId}`).set(...team.auth).expect(200)).body;
    expect(await page.locator('[data-panel=agent] [data-field=transactionCount] .value').textContent()).to.equal(String(agent.transactionCount));
    expect(await page.locator('[data-panel=timeseries] [data-points]').getAttribute('data-points')).to.equal('72');
    const endpoints = (await api().get('/api/v1/analytics/by-endpoint').query({ from, to, agent: agentId, level: 'url' }).set(...team.auth).expect(200)).body;
    expect(await page.locator('[data-panel=agent-endpoints] tbody tr td:first-child').allTextContents()).to.deep.equal(endpoints.map((r: { key: string }) => r.key));
    const alerts = (await api().get('/api/v1/alerts').query({ agent: agentId, limit: 20 }).set(...team.auth).expect(200)).body.data;
    expect(alerts.length).to.be.greaterThan(0);
    expect(await page.locator('[data-panel=agent-alerts] [data-alert]').count()).to.equal(alerts.length);

    // All time first, labelled so; the range bar heads only the panels it governs.
    expect(await page.locator('[data-panel=agent] h2').textContent()).to.equal('All time');
    const order = await page.evaluate(() => {
      const allTime = document.querySelector('[data-panel=agent]')!;
      const section = document.querySelector('.range-section')!;
      return {
        allTimeFirst: Boolean(allTime.compareDocumentPosition(section) & Node.DOCUMENT_POSITION_FOLLOWING),
        allTimeOutside: !section.contains(allTime),
        barsOutside: [...document.querySelectorAll('.range-bar')].filter((bar) => !section.contains(bar)).length,
        inside: [...section.querySelectorAll('section.panel')].map((p) => p.getAttribute('data-panel')),
      };
    });
    expect(order).to.deep.equal({ allTimeFirst: true, allTimeOutside: true, barsOutside: 0, inside: ['agent-range', 'timeseries', 'agent-endpoints'] });
    const inRange = (await api().get('/api/v1/analytics/summary').query({ from, to, agent: agentId }).set(...team.auth).expect(200)).body;
    await page.locator('[data-panel=agent-range] [data-field=totalSpend] .money .asset').waitFor();
    expect(await page.locator('[data-panel=agent-range] [data-field=totalSpend] .money').getAttribute('data-exact')).to.equal(inRange.totalSpend);
    await page.locator('[data-panel=agent] [data-field=totalSpend] .money .asset').waitFor();
    expect(await page.locator('[data-panel=agent] [data-field=totalSpend] .money').getAttribute('data-exact')).to.equal(agent.totalSpend);
    expect(await page.locator('[data-panel=agent] [data-field=totalSpend] .money').textContent()).to.match(/^[\d,]+\.\d{2} USDC$/);
    await page.close();
  });

  it('resolve an alert with a note, and it is resolved through the API; reopen it', async () => {
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(`${server.url}/dashboard/alerts?status=open`);
    await settled(page);
    const first = page.locator('[data-panel=alerts-list] [data-alert]').first();
    const alertId = (await first.getAttribute('data-alert'))!;
    await first.locator('td.row-main a').click();
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    await page.getByLabel('Note (optional): why it is resolved').fill('expected: a load test');
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page.locator('[data-panel=alert] [data-status=resolved]').waitFor();
    const resolved = (await api().get(`/api/v1/alerts/${alertId}`).set(...team.auth).expect(200)).body;
    expect(resolved.status).to.equal('resolved');
    expect(resolved.resolution).to.equal('expected: a load test');
    await page.getByRole('button', { name: 'Reopen' }).click();
    await page.locator('[data-panel=alert] [data-status=open]').waitFor();
    expect((await api().get(`/api/v1/alerts/${alertId}`).set(...team.auth).expect(200)).body.status).to.equal('open');
    await page.close();
  });

  it("a policy with a bad amount shows the API's error at the field; a good one appears in the API's list; deactivate, delete", async () => {
    const page = await newPage('phone');
    await signIn(page);
    await page.goto(`${server.url}/dashboard/policies/new`);
    await page.getByLabel('Name').fill('browser budget');
    await page.getByLabel('Agents (ids, separated by commas; empty: every agent of the team)').fill('research-bot, travel-agent');
    await page.getByLabel('Amount', { exact: true }).fill('12.5.0');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const fieldError = page.locator('[data-field-error="limits[0].amount"]');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).to.include('must be a decimal string');
    expect(await page.locator('input[name="limits[0].amount"]').getAttribute('aria-invalid')).to.equal('true');
    let listed = (await api().get('/api/v1/policies').set(...team.auth).expect(200)).body.data;
    expect(listed.map((p: { name: string }) => p.name)).to.not.include('browser budget');

    await page.getByLabel('Amount', { exact: true }).fill('12.500000000000000001');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.locator('.notice', { hasText: 'browser budget' }).waitFor();
    listed = (await api().get('/api/v1/policies').set(...team.auth).expect(200)).body.data;
    const created = listed.find((p: { name: string }) => p.name === 'browser budget');
    expect(created).to.deep.include({ agents: ['research-bot', 'travel-agent'], action: 'flag', active: true });
    expect(created.limits).to.deep.equal([{ kind: 'daily', amount: '12.500000000000000001' }]);
    await photograph(page, 'policies-saved-phone');

    const row = page.locator(`[data-policy="${created.id}"]`);
    await row.getByRole('button', { name: 'Deactivate' }).click();
    await row.getByRole('button', { name: 'Activate' }).waitFor();
    expect((await api().get(`/api/v1/policies/${created.id}`).set(...team.auth).expect(200)).body.active).to.equal(false);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    await api().get(`/api/v1/policies/${created.id}`).set(...team.auth).expect(404);
    await page.close();
  });

  it("the policy form: a pool policy with a match, thresholds, a calls limit and a total's start is created with those fields; a bad count and a start with seconds show the API's errors at their fields", async () => {
    const own = await newTeam('dashboard-policy-form');
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/policies/new`);
    await page.getByLabel('Name').fill('browser pool');
    await page.getByLabel('Agents (ids, separated by commas; empty: every agent of the team)').fill('research-bot, writer-bot');
    await page.getByRole('radio', { name: /^Pool/ }).check();
    await page.locator('select[name="limits[0].kind"]').selectOption('monthly');
    await page.getByLabel('Amount', { exact: true }).fill('250');
    await page.getByRole('button', { name: 'Add a limit' }).click();
    await page.locator('select[name="limits[1].kind"]').selectOption('calls_per_hour');
    // A call limit takes a count, not an amount.
    expect(await page.locator('input[name="limits[1].amount"]').count()).to.equal(0);
    await page.locator('input[name="limits[1].count"]').fill('2.5');
    await page.getByLabel('Assets (').fill('USDC');
    await page.getByLabel('Categories (').fill('llm, search');
    await page.getByLabel('Alert at (').fill('80, 95');
    // The start of total limits is asked for only when there is one.
    expect(await page.locator('#policy-starts-at').count()).to.equal(0);
    await page.getByRole('button', { name: 'Create policy' }).click();
    const countError = page.locator('[data-field-error="limits[1].count"]');
    await countError.waitFor();
    expect(await countError.textContent()).to.include('must be an integer');
    expect(await page.locator('input[name="limits[1].count"]').getAttribute('aria-invalid')).to.equal('true');

    await page.locator('input[name="limits[1].count"]').fill('120');
    await page.getByRole('button', { name: 'Add a limit' }).click();
    await page.locator('select[name="limits[2].kind"]').selectOption('total');
    await page.locator('input[name="limits[2].amount"]').fill('1000');
    await page.locator('#policy-starts-at').fill('2026-01-01T00:00:30Z');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const startError = page.locator('[data-field-error="starts_at"]');
    await startError.waitFor();
    expect(await startError.textContent()).to.include('whole minute');
    expect(await page.locator('#policy-starts-at').getAttribute('aria-invalid')).to.equal('true');
    expect((await api().get('/api/v1/policies').set(...own.auth).expect(200)).body.data).to.deep.equal([]);

    await page.locator('#policy-starts-at').fill('2026-01-01T00:00:00Z');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.locator('.notice', { hasText: 'browser pool' }).waitFor();
    const [created] = (await api().get('/api/v1/policies').set(...own.auth).expect(200)).body.data;
    expect(created).to.deep.include({ name: 'browser pool', scope: 'pool', agents: ['research-bot', 'writer-bot'], notify_at: [80, 95], starts_at: '2026-01-01T00:00:00.000Z' });
    expect(created.match).to.deep.equal({ assets: ['usdc'], categories: ['llm', 'search'] });
    expect(created.limits).to.deep.equal([
      { kind: 'monthly', amount: '250' },
      { kind: 'calls_per_hour', count: 120 },
      { kind: 'total', amount: '1000' },
    ]);
    // The list says what it is, and its use now, linking to its budgets.
    const row = page.locator(`[data-policy="${created.id}"]`);
    expect(await row.textContent()).to.include('Calls per hour: 120 calls');
    const use = row.locator('[data-current-use] a');
    await use.waitFor();
    expect(await use.getAttribute('href')).to.equal(`/dashboard/budgets?policy_id=${created.id}`);

    // Its page shows what was saved; saved again unchanged, it stays the same.
    await page.goto(`${server.url}/dashboard/policies/${created.id}`);
    await page.locator('[data-panel=policy][data-state=ready]').waitFor();
    expect(await page.getByLabel('Assets (').inputValue()).to.equal('usdc');
    expect(await page.getByLabel('Alert at (').inputValue()).to.equal('80, 95');
    expect(await page.locator('input[name="limits[1].count"]').inputValue()).to.equal('120');
    expect(await page.getByRole('radio', { name: /^Pool/ }).isChecked()).to.equal(true);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('.notice', { hasText: 'browser pool' }).waitFor();
    const saved = (await api().get(`/api/v1/policies/${created.id}`).set(...own.auth).expect(200)).body;
    expect({ ...saved, updatedAt: undefined }).to.deep.equal({ ...created, updatedAt: undefined });
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it('the policy form: an approve policy with the time a person has to decide and an allowlist is created with those fields, and the list says so', async () => {
    const own = await newTeam('dashboard-policy-approve');
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/policies/new`);
    await page.getByLabel('Name').fill('ask above 5');
    await page.locator('select[name="limits[0].kind"]').selectOption('per_call');
    await page.getByLabel('Amount', { exact: true }).fill('5');
    await page.getByLabel('Payees allowed (').fill('0x52908400098527886E0F7030069857D2E4169EE7');
    await page.getByLabel('Networks allowed (').fill('base');
    // The time a person has is asked for only when a person is asked.
    expect(await page.locator('#policy-approval-timeout').count()).to.equal(0);
    await page.getByRole('radio', { name: /^Ask a person/ }).check();
    await page.locator('#policy-approval-timeout').fill('90000');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const timeoutError = page.locator('[data-field-error="approval_timeout_s"]');
    await timeoutError.waitFor();
    expect(await timeoutError.textContent()).to.include('1 to 86400');
    await page.locator('#policy-approval-timeout').fill('600');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.locator('.notice', { hasText: 'ask above 5' }).waitFor();
    const [created] = (await api().get('/api/v1/policies').set(...own.auth).expect(200)).body.data;
    expect(created).to.deep.include({ action: 'approve', approval_timeout_s: 600, limits: [{ kind: 'per_call', amount: '5' }] });
    expect(created.allow).to.deep.equal({ payees: ['0x52908400098527886e0f7030069857d2e4169ee7'], networks: ['eip155:8453'] });
    const row = page.locator(`[data-policy="${created.id}"]`);
    expect(await row.textContent()).to.include('allows only payees 0x52908400098527886e0f7030069857d2e4169ee7; networks eip155:8453').and.include('a person has 10 min to decide');
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it('budgets: every row GET /budgets gives, in its order, a bar of spent and held against the limit with the threshold marks and the forecast; a policy\'s use on the Policies page links to its own', async () => {
    const own = await newTeam('dashboard-budgets');
    const pool = (
      await api()
        .post('/api/v1/policies')
        .set(...own.auth)
        .send({
          name: 'research pool',
          scope: 'pool',
          agents: ['research-bot', 'writer-bot'],
          action: 'block',
          match: { assets: ['USDC'] },
          notify_at: [50, 80],
          limits: [{ kind: 'monthly', amount: '100' }, { kind: 'calls_per_day', count: 40 }],
        })
        .expect(201)
    ).body;
    await api()
      .post('/api/v1/policies')
      .set(...own.auth)
      .send({ name: 'per-agent daily', agents: ['research-bot', 'writer-bot', 'idle-bot'], notify_at: [90], limits: [{ kind: 'daily', amount: '20' }, { kind: 'total', amount: '500' }] })
      .expect(201);
    const paid = (id: string, agent: string, amount: string, asset = 'USDC') => ({ id, agent_id: agent, endpoint: 'https://api.example.com/v1/search', method: 'POST', amount, asset, category: 'search' });
    await api()
      .post('/api/v1/events')
      .set(...own.auth)
      .send({ events: [paid('b-1', 'research-bot', '30'), paid('b-2', 'research-bot', '12.5'), paid('b-3', 'writer-bot', '10.25'), paid('b-4', 'writer-bot', '5', 'EURC')] })
      .expect(200);
    // An open authorization holds part of the budgets.
    await api().post('/api/v1/authorizations').set(...own.auth).send({ agent_id: 'writer-bot', endpoint: 'https://api.example.com/v1/search', amount: '2', asset: 'USDC' }).expect(200);

    for (const viewport of ['wide', 'phone'] as const) {
      const page = await newPage(viewport);
      await signIn(page, own.apiKey);
      await page.goto(`${server.url}/dashboard/budgets`);
      await page.locator('[data-panel=budgets][data-state=ready]').waitFor();
      // Amounts with their assets (the team's, and the policies' match), totals with their start.
      await page.locator('[data-panel=budgets] .money .asset').first().waitFor();
      await page.locator('[data-panel=budgets] [data-kind=total] .budget-window time').first().waitFor();
      const listed = (await api().get('/api/v1/budgets').set(...own.auth).expect(200)).body;
      expect(listed.truncated).to.equal(false);
      // Pool: monthly and calls per day; per agent: daily and total, each of three agents.
      expect(listed.data).to.have.length(8);
      const rows = page.locator('[data-panel=budgets] [data-budget]');
      expect(
        await rows.evaluateAll((els) => els.map((e) => [e.getAttribute('data-policy'), e.getAttribute('data-kind'), e.getAttribute('data-agent')])),
        'the order is the API\'s',
      ).to.deep.equal(listed.data.map((b: { policy_id: string; kind: string; agent_id: string | null }) => [b.policy_id, b.kind, b.agent_id]));
      for (const [i, budget] of (listed.data as {
        policy_name: string;
        kind: string;
        agent_id: string | null;
        window: { start: string; end: string } | null;
        limit: string;
        spent: string;
        held: string;
        used: number;
        notify_at: number[];
        forecast: { spent_at_end: string | null; exhausted_at: string | null };
      }[]).entries()) {
        const row = rows.nth(i);
        const what = `${budget.policy_name} ${budget.kind} ${budget.agent_id}`;
        for (const name of ['spent', 'held', 'limit'] as const) {
          expect(await row.locator(`[data-figure=${name}] [data-exact]`).getAttribute('data-exact'), `${what}: ${name}`).to.equal(budget[name]);
        }
        const spentText = (await row.locator('[data-figure=spent]').textContent())!;
        if (budget.kind === 'calls_per_day') {
          // Calls are counts, not money.
          expect(spentText).to.equal(budget.spent);
          expect(await row.locator('.budget-figures strong').textContent()).to.match(/ calls$/);
        } else {
          // The pool keeps to USDC (amounts of one asset); the per-agent policy counts in value, in
          // the team's currency: said once, after the limit.
          const asset = budget.agent_id === null ? ' USDC' : ' USD';
          const limitText = (await row.locator('[data-figure=limit]').textContent())!;
          expect(limitText.endsWith(asset), `${what}: ${limitText}`).to.equal(true);
          expect(isRoundingOf(limitText.slice(0, -asset.length), budget.limit), `${what}: ${limitText} rounds ${budget.limit}`).to.equal(true);
          expect(isRoundingOf(spentText, budget.spent), `${what}: ${spentText} rounds ${budget.spent}`).to.equal(true);
          expect(await row.locator('[data-figure=spent] .money').getAttribute('title'), what).to.include(budget.agent_id === null ? 'USDC' : 'USD');
        }
        expect(await row.locator('.budget-bar .tick').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-percent')))), what).to.deep.equal(budget.notify_at);
        const meter = row.getByRole('meter');
        expect(await meter.getAttribute('aria-valuenow'), what).to.equal(String(Math.min(100, Math.round(budget.used * 100))));
        expect(await meter.getAttribute('aria-valuetext'), what).to.match(/^spent .+ of .+, [\d.]+%/);
        // Over its limit, the bar stretches past a line at the limit.
        expect(await row.locator('.budget-bar .over').count(), what).to.equal(budget.used > 1 ? 1 : 0);
        const times = await row.locator('.budget-window time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')));
        if (budget.window) expect(times, what).to.deep.equal([budget.window.start, budget.window.end]);
        else expect((await row.locator('.budget-window').textContent())!, what).to.match(/^since \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}$/);
        const forecast = (await row.locator('.budget-forecast').textContent())!;
        if (budget.spent === '0') expect(forecast, what).to.include('nothing spent yet');
        else if (budget.forecast.spent_at_end !== null) expect(forecast, what).to.include('on course for');
        if (budget.used >= 1) expect(forecast, what).to.include('the limit is reached');
        else if (budget.forecast.exhausted_at !== null) {
          // The forecast moves with the clock: the page's answer came a moment before the test's.
          const shown = Date.parse((await row.locator('[data-forecast=exhausted_at] time').getAttribute('datetime'))!);
          expect(Math.abs(shown - Date.parse(budget.forecast.exhausted_at)), what).to.be.below(10 * 60_000);
        }
      }
      // The over-spent agent: 42.50 of 20.
      expect(listed.data[0]).to.deep.include({ kind: 'daily', agent_id: 'research-bot', spent: '42.5' });
      expect(await rows.first().locator('.budget-bar').getAttribute('class')).to.include('stretched');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `budgets at ${viewport}: sideways overflow`).to.be.at.most(0);
      expect(await clippedControls(page), `budgets at ${viewport}: controls not fully shown`).to.deep.equal([]);
      await photograph(page, `budgets-own-${viewport}`);
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }

    // The Policies page: each policy's fullest budget per kind, linking to its budgets.
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/policies`);
    const use = page.locator(`[data-policy="${pool.id}"] [data-current-use] a`);
    await use.waitFor();
    const poolRows = (await api().get('/api/v1/budgets').query({ policy_id: pool.id }).set(...own.auth).expect(200)).body.data as { kind: string; used: number }[];
    expect(await use.locator('[data-use-kind]').evaluateAll((els) => els.map((e) => e.getAttribute('data-use-kind')))).to.deep.equal(poolRows.map((b) => b.kind));
    expect(await use.textContent()).to.match(/^now: (monthly|calls per day) [\d.]+% \(pool\) · (monthly|calls per day) [\d.]+% \(pool\)$/);
    expect(await page.locator('[data-current-use]').first().textContent()).to.match(/\((research-bot|writer-bot|idle-bot|pool)\)/);
    await use.click();
    await page.waitForURL(new RegExp(`/dashboard/budgets\\?policy_id=${pool.id}$`));
    await page.locator('[data-panel=budgets][data-state=ready]').waitFor();
    expect(await page.locator('[data-budget]').evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')))).to.deep.equal(poolRows.map((b) => b.kind));
    expect(await page.locator('select[name=policy_id]').inputValue()).to.equal(pool.id);
    await page.close();
  });

  it('team: usage; a key created with scopes is shown once and revoked; a webhook added, tested, and its delivery log', async () => {
    const received: string[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => (received.push(body), res.writeHead(204).end()));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const page = await newPage('wide');
      await signIn(page);
      await page.goto(`${server.url}/dashboard/team`);
      await settled(page);
      const usage = (await api().get('/api/v1/team').set(...team.auth).expect(200)).body.usage;
      expect(await page.locator('[data-panel=usage] [data-field=events] .value').textContent()).to.equal(String(usage.events));

      await page.getByText('Create a key').click();
      await page.getByLabel('Name (who holds it)').fill('grafana');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = (await page.locator('[data-secret=api-key]').textContent())!;
      expect(secret).to.match(/^ss_/);
      // The new key works, with the scope it was given: read, and not admin.
      await api().get('/api/v1/team').set(...bearer(secret)).expect(200);
      await api().post('/api/v1/policies').set(...bearer(secret)).send({ name: 'x', limits: [{ kind: 'daily', amount: '1' }] }).expect(403);
      const keys = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data;
      const grafana = keys.find((k: { name: string }) => k.name === 'grafana');
      expect(grafana.scopes).to.deep.equal(['read']);
      page.once('dialog', (dialog) => void dialog.accept());
      await page.locator(`[data-key="${grafana.id}"]`).getByRole('button', { name: 'Revoke' }).click();
      await page.locator(`[data-key="${grafana.id}"]`).waitFor({ state: 'detached' });
      await api().get('/api/v1/team').set(...bearer(secret)).expect(401);

      await page.getByText('Add a webhook').click();
      await page.getByLabel('URL').fill(receiverUrl);
      await page.getByRole('button', { name: 'Add webhook' }).click();
      await page.locator('.notice code.secret', { hasText: 'whsec_' }).waitFor();
      const hook = (await api().get('/api/v1/webhooks').set(...team.auth).expect(200)).body.data.find((w: { url: string }) => w.url === receiverUrl);
      expect(hook.events).to.deep.equal(['alert.opened', 'alert.escalated']);
      await page.locator(`[data-webhook="${hook.id}"]`).getByRole('button', { name: 'Send test' }).click();
      await page.locator('.notice', { hasText: 'Test delivered: 204' }).waitFor();
      expect(received.some((body) => body.includes('"type":"test"'))).to.equal(true);
      await photograph(page, 'team-wide');

      await page.locator(`[data-webhook="${hook.id}"] a`).click();
      await page.waitForURL(/\/dashboard\/team\/webhooks\//);
      await settled(page);
      const log = (await api().get(`/api/v1/webhooks/${hook.id}/deliveries`).set(...team.auth).expect(200)).body.data;
      expect(await page.locator('[data-panel=deliveries] [data-delivery]').count()).to.equal(log.length);
      expect(await page.locator('[data-panel=deliveries] [data-delivery]').first().textContent()).to.include('delivered');
      await photograph(page, 'webhook-deliveries-wide');
      await page.close();
    } finally {
      receiver.close();
    }
  });

  /** Polls `read` until it equals `expected` (a page answering a changed filter), then asserts it. */
  async function eventually<T>(read: () => Promise<T>, expected: T, what: string, ms = 10_000): Promise<void> {
    const until = Date.now() + ms;
    let last = await read();
    while (JSON.stringify(last) !== JSON.stringify(expected) && Date.now() < until) {
      await sleep(100);
      last = await read();
    }
    expect(last, what).to.deep.equal(expected);
  }

  type AuditRecordBody = { id: string; agent_id: string; endpoint: string; amount: string; asset: string; policy_evaluation: string; created_at: number };

  it("records: the team's records newest first, as POST /audit/query answers them, 50 at a time; the agent, endpoint, status and time filters ask it the same; a record's own page", async () => {
    const query = async (q: Record<string, unknown>) =>
      (await api().post('/api/v1/audit/query').set(...team.auth).send({ orderBy: 'created_at', order: 'desc', limit: 50, ...q }).expect(200)).body as AuditRecordBody[];
    const count = async (q: Record<string, unknown>) => (await api().post('/api/v1/audit/count').set(...team.auth).send(q).expect(200)).body.count as number;
    const page = await newPage('wide');
    await signIn(page);
    // Times are typed in the dashboard's zone: one half an hour off UTC, with no clock change.
    await page.evaluate(() => sessionStorage.setItem('spendscope.timeZone', 'Asia/Kolkata'));
    await page.goto(`${server.url}/dashboard/records`);
    await page.locator('[data-panel=records][data-state=ready]').waitFor();
    const rows = page.locator('[data-panel=records] [data-record]');
    const shown = () => rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-record')));
    const shownCount = () => page.locator('[data-panel=records] [data-count]').getAttribute('data-count');

    const newest = await query({ limit: 100 });
    expect(newest).to.have.length(100);
    expect(await shown()).to.deep.equal(newest.slice(0, 50).map((r) => r.id));
    await eventually(shownCount, String(RECORDS), 'records matching');
    for (const [i, record] of newest.slice(0, 50).entries()) {
      const money = rows.nth(i).locator('td[data-label=Amount] .money');
      expect(await money.getAttribute('data-exact'), record.id).to.equal(record.amount);
      const text = (await money.textContent())!;
      expect(isRoundingOf(text.replace(/ USDC$/, ''), record.amount) && text.endsWith(' USDC'), `${record.id}: ${text} rounds ${record.amount} USDC`).to.equal(true);
      expect(await rows.nth(i).locator('td[data-label=Agent]').textContent()).to.equal(record.agent_id);
      expect(await rows.nth(i).locator('td[data-label=Status]').textContent()).to.equal(record.policy_evaluation);
      expect(await rows.nth(i).locator('td[data-label=Time] time').getAttribute('datetime')).to.equal(new Date(record.created_at).toISOString());
      expect(await rows.nth(i).locator('td.row-main a').textContent()).to.equal(`POST ${record.endpoint}`);
    }
    await page.getByRole('button', { name: 'Load more' }).click();
    await eventually(shown, newest.map((r) => r.id), 'the second page follows the first');

    // Agent and endpoint: each narrows what is asked, as the API narrows it.
    await page.locator('input[name=agent]').fill('travel-agent');
    await page.locator('input[name=agent]').press('Enter');
    await page.waitForURL(/agent=travel-agent/);
    const byAgent = await query({ agentId: 'travel-agent' });
    expect(byAgent.length).to.be.within(1, 50);
    await eventually(shown, byAgent.map((r) => r.id), 'agent travel-agent');
    await eventually(shownCount, String(await count({ agentId: 'travel-agent' })), 'count of agent travel-agent');
    await page.locator('input[name=endpoint]').fill('search.example');
    await page.locator('input[name=endpoint]').press('Enter');
    await page.waitForURL(/endpoint=search.example/);
    const byBoth = await query({ agentId: 'travel-agent', endpoint: 'search.example' });
    expect(byBoth.length).to.be.within(1, byAgent.length - 1);
    expect(byBoth.every((r) => r.endpoint.includes('search.example'))).to.equal(true);
    await eventually(shown, byBoth.map((r) => r.id), 'agent and endpoint');
    await page.locator('input[name=agent]').fill('');
    await page.locator('input[name=agent]').press('Enter');
    await page.locator('select[name=status]').selectOption('flagged');
    await page.waitForURL((url) => url.searchParams.get('status') === 'flagged' && !url.searchParams.has('agent'));
    const flagged = await query({ endpoint: 'search.example', status: ['flagged'] });
    expect(flagged.length).to.be.greaterThan(0);
    await eventually(shown, flagged.map((r) => r.id), 'endpoint and status');

    // Time: from and until typed as wall times of the zone (UTC+05:30), until excluded.
    await page.goto(`${server.url}/dashboard/records`);
    await page.locator('[data-panel=records][data-state=ready]').waitFor();
    const start = from + 24 * HOUR + 7 * 60_000;
    const end = start + 6 * HOUR;
    const wall = (ms: number) => new Date(ms + 5.5 * HOUR).toISOString().slice(0, 16);
    await page.locator('input[name=from]').fill(wall(start));
    await page.locator('input[name=to]').fill(wall(end));
    await page.waitForURL((url) => url.searchParams.get('from') === new Date(start).toISOString() && url.searchParams.get('to') === new Date(end).toISOString());
    const inTime = await query({ startTime: start, endTime: end - 1 });
    expect(inTime.length).to.be.within(2, 49);
    expect(inTime.every((r) => r.created_at >= start && r.created_at < end)).to.equal(true);
    await eventually(shown, inTime.map((r) => r.id), 'from and until');
    await eventually(shownCount, String(inTime.length), 'count from and until');

    // A record's own page, from its row.
    const first = inTime[0]!;
    await rows.first().locator('td.row-main a').click();
    await page.waitForURL(`${server.url}/dashboard/records/${first.id}`);
    await page.locator('[data-panel=record][data-state=ready]').waitFor();
    const record = (await api().get(`/api/v1/audit/${first.id}`).set(...team.auth).expect(200)).body as AuditRecordBody;
    expect(await page.locator('[data-panel=record] [data-record]').getAttribute('data-record')).to.equal(record.id);
    expect(await page.locator('[data-panel=record] [data-field=amount] dd').textContent()).to.equal(`${record.amount} USDC`);
    expect(await page.locator('[data-panel=record] [data-field=endpoint] dd').textContent()).to.equal(record.endpoint);
    await photograph(page, 'record-wide');
    // An id the team does not have: said so.
    await page.goto(`${server.url}/dashboard/records/no-such-record`);
    await page.locator('[data-panel=record][data-state=ready] .state.empty').waitFor();
    expect(await page.locator('[data-panel=record] .state.empty').textContent()).to.include('no record “no-such-record”');
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it("an alert's sample records link to their own pages, and its window to its agent's records in it", async () => {
    const alerts = (await api().get('/api/v1/alerts').query({ limit: 50 }).set(...team.auth).expect(200)).body.data as {
      id: string;
      agentId: string;
      sampleEventIds: string[];
      window: { start: string; end: string } | null;
    }[];
    const alert = alerts.find((a) => a.sampleEventIds.length > 1 && a.window?.end && a.agentId)!;
    expect(alert, 'an alert with samples and a window').to.not.equal(undefined);
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(`${server.url}/dashboard/alerts/${alert.id}`);
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    const links = page.locator('[data-panel=alert] [data-sample-record]');
    expect(await links.evaluateAll((els) => els.map((e) => [e.getAttribute('data-sample-record'), e.getAttribute('href')]))).to.deep.equal(
      alert.sampleEventIds.map((id) => [id, `/dashboard/records/${encodeURIComponent(id)}`]),
    );
    const sample = alert.sampleEventIds[1]!;
    await links.nth(1).click();
    await page.waitForURL(`${server.url}/dashboard/records/${encodeURIComponent(sample)}`);
    await page.locator('[data-panel=record][data-state=ready]').waitFor();
    const record = (await api().get(`/api/v1/audit/${encodeURIComponent(sample)}`).set(...team.auth).expect(200)).body as AuditRecordBody;
    expect(record.agent_id).to.equal(alert.agentId);
    expect(await page.locator('[data-panel=record] [data-record]').getAttribute('data-record')).to.equal(sample);
    expect(await page.locator('[data-panel=record] [data-field=amount] dd').textContent()).to.equal(`${record.amount} USDC`);

    await page.goBack();
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    await page.getByRole('link', { name: 'its records' }).click();
    await page.waitForURL(/\/dashboard\/records\?/);
    const inWindow = (
      await api()
        .post('/api/v1/audit/query')
        .set(...team.auth)
        .send({ agentId: alert.agentId, startTime: Date.parse(alert.window!.start), endTime: Date.parse(alert.window!.end) - 1, orderBy: 'created_at', order: 'desc', limit: 50 })
        .expect(200)
    ).body as AuditRecordBody[];
    expect(inWindow.map((r) => r.id)).to.include(sample);
    await page.locator('[data-panel=records][data-state=ready]').waitFor();
    await eventually(() => page.locator('[data-panel=records] [data-record]').evaluateAll((els) => els.map((e) => e.getAttribute('data-record'))), inWindow.map((r) => r.id), "the alert's records");
    await page.close();
  });

  it('the audit log shows a change just made on a page: who, what, each changed field before and after, as GET /audit-log answers', async () => {
    const own = await newTeam('dashboard-audit-log');
    const policy = await newPolicy(own, { name: 'logged budget', limits: [{ kind: 'daily', amount: '5' }] });
    await api().patch(`/api/v1/policies/${policy.id}`).set(...own.auth).send({ limits: [{ kind: 'daily', amount: '7.5' }] }).expect(200);
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/policies`);
    const row = page.locator(`[data-policy="${policy.id}"]`);
    await row.getByRole('button', { name: 'Deactivate' }).click();
    await row.getByRole('button', { name: 'Activate' }).waitFor();
    // From the menu, as an admin key finds it.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(/\/dashboard\/audit-log$/);
    await page.locator('[data-panel=audit-log][data-state=ready]').waitFor();
    const log = (await api().get('/api/v1/audit-log').set(...own.auth).expect(200)).body.data as {
      id: string;
      action: string;
      keyName: string;
      resourceId: string;
      changes: Record<string, { before: unknown; after: unknown }>;
    }[];
    expect(log.map((c) => c.action)).to.deep.equal(['policy.update', 'policy.update', 'policy.create']);
    const entries = page.locator('[data-panel=audit-log] [data-change]');
    expect(await entries.evaluateAll((els) => els.map((e) => e.getAttribute('data-change')))).to.deep.equal(log.map((c) => c.id));
    // The change just made, first: by this key, to this policy, the field it changed.
    const latest = entries.first();
    expect(log[0]!.changes.active).to.deep.equal({ before: true, after: false });
    expect(await latest.getAttribute('data-resource')).to.equal(policy.id);
    expect(await latest.locator('[data-key-name]').textContent()).to.equal(log[0]!.keyName);
    // A change that does not name the resource shows its id; its creation shows its name.
    expect(await latest.locator('.change-head').textContent()).to.include(`changed the policy ${policy.id}`);
    expect(await entries.nth(2).locator('.change-head').textContent()).to.include(`created the policy logged budget (${policy.id})`);
    expect(await latest.locator('.change-head a').getAttribute('href')).to.equal(`/dashboard/policies/${policy.id}`);
    expect(await latest.locator('[data-field]').evaluateAll((els) => els.map((e) => e.getAttribute('data-field')))).to.deep.equal(Object.keys(log[0]!.changes));
    expect(await latest.locator('[data-field=active] [data-before]').textContent()).to.equal('true');
    expect(await latest.locator('[data-field=active] [data-after]').textContent()).to.equal('false');
    // The API's change of limits, its amounts as the API wrote them.
    const limits = entries.nth(1).locator('[data-field=limits]');
    expect(await limits.locator('[data-before]').textContent()).to.equal(JSON.stringify(log[1]!.changes.limits!.before));
    expect(await limits.locator('[data-after]').textContent()).to.equal(JSON.stringify(log[1]!.changes.limits!.after));
    expect(await limits.locator('[data-after]').textContent()).to.include('"7.5"');

    // Filters ask the API the same.
    await page.locator('select[name=resource_type]').selectOption('alert');
    await page.waitForURL(/resource_type=alert/);
    expect((await api().get('/api/v1/audit-log').query({ resource_type: 'alert' }).set(...own.auth).expect(200)).body.data).to.deep.equal([]);
    await page.locator('[data-panel=audit-log] .state.empty').waitFor();
    await page.locator('select[name=resource_type]').selectOption('policy');
    await page.locator('input[name=resource_id]').fill(policy.id);
    await page.locator('input[name=resource_id]').press('Enter');
    await page.waitForURL(/resource_id=/);
    const ofPolicy = (await api().get('/api/v1/audit-log').query({ resource_type: 'policy', resource_id: policy.id }).set(...own.auth).expect(200)).body.data as { id: string }[];
    expect(ofPolicy).to.have.length(3);
    await eventually(() => entries.evaluateAll((els) => els.map((e) => e.getAttribute('data-change'))), ofPolicy.map((c) => c.id), 'changes of the policy');
    await photograph(page, 'audit-log-own-wide');
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it("records' values: each row's value in the team currency as POST /records/values gives it, an unvalued one flagged; a record's page names the rates used", async () => {
    const own = await newTeam('record-values');
    const since = new Date(Date.now() - 3_600_000).toISOString();
    await api().put('/api/v1/rates/EUR').set(...own.auth).send({ value: '1.08', currency: 'USD', valid_from: since }).expect(200);
    const paid = (id: string, amount: string, asset: string) => ({ id, agent_id: 'research-bot', endpoint: 'https://api.example.com/v1/search', method: 'GET', amount, asset });
    await api()
      .post('/api/v1/events')
      .set(...own.auth)
      .send({ events: [paid('val-usdc', '2.5', 'USDC'), paid('val-eurc', '10', 'EURC'), paid('val-mystery', '1', 'MYSTERY')] })
      .expect(200);
    const values = (await api().post('/api/v1/records/values').set(...own.auth).send({ ids: ['val-usdc', 'val-eurc', 'val-mystery'] }).expect(200)).body.data as { id: string; value: string | null }[];
    expect(values.map((v) => [v.id, v.value])).to.deep.equal([['val-eurc', '10.8'], ['val-mystery', null], ['val-usdc', '2.5']]);
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/records`);
    await page.locator('[data-panel=records][data-state=ready]').waitFor();
    const cell = (id: string) => page.locator(`[data-panel=records] td[data-value="${id}"]`);
    await cell('val-mystery').locator('[data-unvalued]').waitFor();
    for (const { id, value } of values) {
      if (value === null) {
        expect(await cell(id).locator('.money').count(), id).to.equal(0);
        expect(await cell(id).textContent()).to.equal('unvalued');
      } else {
        expect(await cell(id).locator('.money').getAttribute('data-exact'), id).to.equal(value);
        expect(await cell(id).textContent(), id).to.match(/ USD$|^\$/);
      }
    }
    await page.goto(`${server.url}/dashboard/records/val-eurc`);
    await page.locator('[data-panel=record][data-state=ready]').waitFor();
    await page.locator('[data-panel=record] [data-field=value] .money').waitFor();
    expect(await page.locator('[data-panel=record] [data-field=value] .money').getAttribute('data-exact')).to.equal('10.8');
    const usedRates = page.locator('[data-panel=record] dt', { hasText: 'Valued by' }).locator('xpath=following-sibling::dd[1]');
    expect(await usedRates.textContent()).to.match(/^1 EURC = 1 EUR \(built-in\), 1 EUR = 1\.08 USD \(team rate from .+\)$/);
    expect(await usedRates.locator('[data-used-rate=EUR] time').getAttribute('datetime')).to.equal(since);
  });

  it('rates: the team currency and what each asset is worth in it, as GET /rates gives them; a rate set from the form, its history a click away, ended; a currency change', async () => {
    const own = await newTeam('rates-page');
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Rates' }).click();
    await page.waitForURL(/\/dashboard\/rates$/);
    await page.locator('[data-panel=rates][data-state=ready]').waitFor();
    const listed = async () => (await api().get('/api/v1/rates').set(...own.auth).expect(200)).body as { currency: string; data: { asset: string; value_in_team_currency: string | null }[] };
    const shown = () => page.locator('[data-rates] [data-rate]').evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-rate'), r.querySelector('[data-in-team-currency]')!.getAttribute('data-in-team-currency')]));
    const before = await listed();
    expect(await page.locator('[data-team-currency]').getAttribute('data-team-currency')).to.equal('USD');
    expect(await shown()).to.deep.equal(before.data.map((r) => [r.asset, r.value_in_team_currency ?? '']));

    // A rate from the form: ETH in USD, from an hour ago, with its decimals.
    await page.getByText('Set the rate of an asset or a currency').click();
    await page.locator('#rate-asset').fill('ETH');
    await page.locator('#rate-value').fill('3050.25');
    await page.locator('#rate-decimals').fill('18');
    await page.getByRole('button', { name: 'Set rate' }).click();
    await page.locator('[data-panel=set-rate] .notice').waitFor();
    await page.locator('[data-rate=ETH]').waitFor();
    expect(await page.locator('[data-rate=ETH] [data-in-team-currency]').getAttribute('data-in-team-currency')).to.equal('3050.25');
    const history = (await api().get('/api/v1/rates/ETH').set(...own.auth).expect(200)).body.data as { value: string }[];
    expect(history.map((v) => v.value)).to.deep.equal(['3050.25']);
    // A bad value: the API's message at its field.
    await page.locator('#rate-asset').fill('BTC');
    await page.locator('#rate-value').fill('-1');
    await page.getByRole('button', { name: 'Set rate' }).click();
    await page.locator('[data-field-error=value]').waitFor();
    // The history a click away.
    await page.locator('[data-rate=ETH] summary').click();
    await page.locator('[data-rate-history=ETH] li').first().waitFor();
    expect(await page.locator('[data-rate-history=ETH] li').count()).to.equal(1);
    // Ended: the team's rate is no longer in effect, and ETH (no peg) leaves the list.
    await page.locator('[data-rate=ETH]').getByRole('button', { name: 'End' }).click();
    await eventually(async () => page.locator('[data-rate=ETH]').count(), 0, 'ETH ended');
    expect((await listed()).data.some((r) => r.asset === 'ETH')).to.equal(false);

    // The team currency: EUR, and EURC is worth 1 in it.
    await page.getByText('Change the team currency').click();
    await page.locator('#team-currency').fill('EUR');
    await page.getByRole('button', { name: 'Change currency' }).click();
    await eventually(async () => page.locator('[data-team-currency]').getAttribute('data-team-currency'), 'EUR', 'currency changed');
    expect((await api().get('/api/v1/team').set(...own.auth).expect(200)).body.currency).to.equal('EUR');
    await eventually(async () => page.locator('[data-rate=EURC] [data-in-team-currency]').getAttribute('data-in-team-currency'), '1', 'EURC in EUR');
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  type AuthorizationBody = {
    id: string;
    decision: string;
    status: string;
    agent_id: string;
    amount: string;
    reasons: string[];
    checks: { policy_id: string; breaks: boolean }[];
    decided_by: string | null;
    decision_note: string | null;
  };

  /**
   * A team whose authorizations cover every state: held, declined (over a block policy's cap),
   * voided, and pending (over an approve policy's, waiting for a person), for two agents.
   */
  async function teamWithAuthorizations(label: string) {
    const own = await newTeam(label);
    await newPolicy(own, { name: 'Hard cap', limits: [{ kind: 'per_call', amount: '5' }], action: 'block' });
    await newPolicy(own, { name: 'Ask above 1', limits: [{ kind: 'per_call', amount: '1' }], action: 'approve' });
    const ask = async (agent: string, amount: string) =>
      (await api().post('/api/v1/authorizations').set(...own.auth).send({ agent_id: agent, endpoint: 'https://api.example.com/v1/search', amount, asset: 'USDC' }).expect(200)).body as AuthorizationBody;
    const made = {
      held: await ask('pay-bot', '0.40'),
      declined: await ask('pay-bot', '7.5'),
      otherHeld: await ask('other-bot', '0.30'),
      otherDeclined: await ask('other-bot', '12'),
      voided: await ask('pay-bot', '0.10'),
      pending: await ask('pay-bot', '2.25'),
      otherPending: await ask('other-bot', '3.125'),
    };
    await api().post(`/api/v1/authorizations/${made.voided.id}/void`).set(...own.auth).expect(200);
    expect([made.held.status, made.declined.status, made.pending.status, made.otherPending.status]).to.deep.equal(['held', 'declined', 'pending', 'pending']);
    const list = async (query: Record<string, string> = {}) => (await api().get('/api/v1/authorizations').query(query).set(...own.auth).expect(200)).body.data as AuthorizationBody[];
    return { own, made, list };
  }

  const idsOf = (page: Page, selector: string) => page.locator(selector).evaluateAll((els) => els.map((e) => e.getAttribute('data-authorization')));

  it('authorizations: those waiting for a decision first, then the rest as GET /authorizations answers, declined ones with their reasons; status and agent filters; an authorization\'s page with its checks', async () => {
    const { own, made, list } = await teamWithAuthorizations('dashboard-authorizations');
    const page = await newPage('wide');
    await signIn(page, own.apiKey);
    await page.goto(`${server.url}/dashboard/authorizations`);
    await settled(page);
    const pending = await list({ status: 'pending' });
    expect(pending.map((a) => a.id)).to.have.members([made.pending.id, made.otherPending.id]);
    expect(await idsOf(page, '[data-panel=pending] [data-authorization]')).to.deep.equal(pending.map((a) => a.id));
    const rest = (await list()).filter((a) => a.status !== 'pending');
    expect(rest).to.have.length(5);
    expect(await idsOf(page, '[data-panel=authorizations-list] [data-authorization]')).to.deep.equal(rest.map((a) => a.id));
    // Waiting first: the pending list is above the rest.
    expect(await page.evaluate(() => Boolean(document.querySelector('[data-panel=pending]')!.compareDocumentPosition(document.querySelector('[data-panel=authorizations-list]')!) & Node.DOCUMENT_POSITION_FOLLOWING))).to.equal(true);
    for (const a of [...pending, ...rest]) {
      const row = page.locator(`[data-authorization="${a.id}"]`);
      expect(await row.locator('.money').first().getAttribute('data-exact'), a.id).to.equal(a.amount);
      expect(await row.locator('.money').first().textContent(), a.id).to.match(/ USDC$/);
      // A declined one says why (the reasons of the API); a pending one what it would break.
      const reasons = await row.locator('[data-reasons] li').allTextContents();
      if (a.status === 'declined' || a.status === 'pending') {
        expect(a.reasons.length, a.id).to.be.greaterThan(0);
        expect(reasons, a.id).to.deep.equal(a.reasons);
      } else expect(reasons, a.id).to.deep.equal([]);
      if (a.status !== 'pending') expect(await row.locator('td[data-label=Status]').textContent(), a.id).to.equal(a.status);
    }
    expect(made.declined.reasons.join()).to.include('Hard cap');
    await photograph(page, 'authorizations-own-wide');

    // Status: only that status, and no list of pending ones.
    await page.locator('select[name=status]').selectOption('declined');
    await page.waitForURL(/status=declined/);
    await page.locator('[data-panel=pending]').waitFor({ state: 'detached' });
    const declined = await list({ status: 'declined' });
    expect(declined.map((a) => a.id)).to.have.members([made.declined.id, made.otherDeclined.id]);
    await eventually(() => idsOf(page, '[data-panel=authorizations-list] [data-authorization]'), declined.map((a) => a.id), 'status declined');
    // And an agent.
    await page.locator('input[name=agent]').fill('other-bot');
    await page.locator('input[name=agent]').press('Enter');
    await page.waitForURL(/agent=other-bot/);
    await eventually(() => idsOf(page, '[data-panel=authorizations-list] [data-authorization]'), [made.otherDeclined.id], 'declined of other-bot');
    await page.locator('select[name=status]').selectOption('pending');
    await page.waitForURL(/status=pending/);
    await page.locator('[data-panel=authorizations-list]').waitFor({ state: 'detached' });
    expect((await list({ status: 'pending', agent: 'other-bot' })).map((a) => a.id)).to.deep.equal([made.otherPending.id]);
    await eventually(() => idsOf(page, '[data-panel=pending] [data-authorization]'), [made.otherPending.id], 'pending of other-bot');

    // Its page: the decision and every check as it stood, the broken one marked.
    await page.goto(`${server.url}/dashboard/authorizations?status=declined&agent=pay-bot`);
    await page.locator(`[data-authorization="${made.declined.id}"] td.row-main a`).click();
    await page.waitForURL(`${server.url}/dashboard/authorizations/${made.declined.id}`);
    await page.locator('[data-panel=authorization][data-state=ready]').waitFor();
    const detail = (await api().get(`/api/v1/authorizations/${made.declined.id}`).set(...own.auth).expect(200)).body as AuthorizationBody;
    expect(await page.locator('[data-panel=authorization] [data-field=decision] dd').textContent()).to.equal(detail.decision);
    expect(await page.locator('[data-panel=authorization] [data-field=amount] dd').textContent()).to.equal('7.5 USDC');
    expect(await page.locator('[data-panel=authorization] [data-reasons] li').allTextContents()).to.deep.equal(detail.reasons);
    expect(await page.locator('[data-panel=authorization] [data-check]').evaluateAll((els) => els.map((e) => [e.getAttribute('data-check'), e.hasAttribute('data-breaks')]))).to.deep.equal(
      detail.checks.map((c) => [c.policy_id, c.breaks]),
    );
    expect(detail.checks.some((c) => c.breaks)).to.equal(true);

    // The approval alert of a pending one leads to it.
    const approvals = (await api().get('/api/v1/alerts').query({ type: 'approval' }).set(...own.auth).expect(200)).body.data as { id: string; subject: string }[];
    const approval = approvals.find((x) => x.subject === made.pending.id)!;
    expect(approval, 'the approval alert').to.not.equal(undefined);
    await page.goto(`${server.url}/dashboard/alerts/${approval.id}`);
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    expect(await page.locator('[data-panel=alert] .alert-title').textContent()).to.include('Payment waiting for approval');
    await page.getByRole('link', { name: `authorization ${made.pending.id}` }).click();
    await page.waitForURL(`${server.url}/dashboard/authorizations/${made.pending.id}`);
    await page.locator('[data-panel=authorization] [data-status=pending]').first().waitFor();
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it('approve and deny from the page, with a note, by a key with the approve scope; an answer someone gave first is said so, not overwritten', async () => {
    const { own, made, list } = await teamWithAuthorizations('dashboard-approve');
    const { apiKey: approver } = await keyWith(own, { name: 'approver', scopes: ['read', 'approve'] });
    const page = await newPage('phone');
    await signIn(page, approver);
    // Not an admin: no audit log in the menu.
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Records' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents()).to.not.include('Audit log');
    await page.goto(`${server.url}/dashboard/authorizations`);
    await settled(page);
    const first = page.locator(`[data-panel=pending] [data-authorization="${made.pending.id}"]`);
    await first.getByLabel('Note (optional)').fill('expected: a large search');
    await photograph(page, 'authorizations-pending-phone');
    await first.getByRole('button', { name: 'Approve' }).click();
    await first.waitFor({ state: 'detached' });
    const approved = (await api().get(`/api/v1/authorizations/${made.pending.id}`).set(...own.auth).expect(200)).body as AuthorizationBody;
    expect(approved).to.deep.include({ decision: 'approved', status: 'held', decided_by: 'approver', decision_note: 'expected: a large search' });
    // It is among the decided ones now, with who decided and why.
    const decidedRow = page.locator(`[data-panel=authorizations-list] [data-authorization="${made.pending.id}"]`);
    await decidedRow.waitFor();
    expect(await decidedRow.locator('[data-decided-by]').textContent()).to.equal('approved by approver: expected: a large search');

    await page.locator(`[data-panel=pending] [data-authorization="${made.otherPending.id}"]`).getByRole('button', { name: 'Deny' }).click();
    await page.locator('[data-panel=pending] .state.empty').waitFor();
    const denied = (await api().get(`/api/v1/authorizations/${made.otherPending.id}`).set(...own.auth).expect(200)).body as AuthorizationBody;
    expect(denied).to.deep.include({ decision: 'declined', status: 'declined', decided_by: 'approver', decision_note: null });
    expect(await list({ status: 'pending' })).to.deep.equal([]);

    // Answered by someone else while the page showed it: the page says so and shows what it is now.
    const late = (await api().post('/api/v1/authorizations').set(...own.auth).send({ agent_id: 'pay-bot', endpoint: 'https://api.example.com/v1/search', amount: '4', asset: 'USDC' }).expect(200)).body as AuthorizationBody;
    await page.goto(`${server.url}/dashboard/authorizations/${late.id}`);
    await page.locator('[data-panel=authorization][data-state=ready]').waitFor();
    await api().post(`/api/v1/authorizations/${late.id}/approve`).set(...own.auth).send({}).expect(200);
    await page.getByRole('button', { name: 'Deny' }).click();
    // The 409's message, and what it is now.
    const refused = page.locator('p.field-error[role=alert]');
    await refused.waitFor();
    expect(await refused.textContent()).to.match(/approved|held|decided/i);
    await page.locator('[data-panel=authorization] [data-status=held]').first().waitFor();
    expect(await page.getByRole('button', { name: 'Deny' }).count()).to.equal(0);
    const after = (await api().get(`/api/v1/authorizations/${late.id}`).set(...own.auth).expect(200)).body as AuthorizationBody;
    expect(after).to.deep.include({ decision: 'approved', status: 'held' });
    expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
    await page.close();
  });

  it('a read key sees the authorizations waiting for a decision without Approve or Deny, and no audit log: not in the menu, and its page asks nothing', async () => {
    const { own, made } = await teamWithAuthorizations('dashboard-read-approvals');
    const { apiKey: reader } = await keyWith(own, { name: 'reader', scopes: ['read'] });
    for (const [key, admin] of [[own.apiKey, true], [reader, false]] as const) {
      const page = await newPage('wide');
      const asked: string[] = [];
      page.on('request', (request) => asked.push(new URL(request.url()).pathname));
      await signIn(page, key);
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Records' }).waitFor();
      // What GET /team says of the key decides the menu.
      await page.waitForFunction(() => sessionStorage.getItem('spendscope.access') !== null);
      const menu = await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents();
      expect(menu.includes('Audit log'), `admin ${admin}: ${menu}`).to.equal(admin);
      await page.goto(`${server.url}/dashboard/authorizations`);
      await settled(page);
      const waiting = page.locator(`[data-panel=pending] [data-authorization="${made.pending.id}"]`);
      await waiting.waitFor();
      expect(await page.getByRole('button', { name: 'Approve' }).count(), `admin ${admin}`).to.equal(admin ? 2 : 0);
      expect(await page.getByRole('button', { name: 'Deny' }).count(), `admin ${admin}`).to.equal(admin ? 2 : 0);
      expect(await page.getByLabel('Note (optional)').count(), `admin ${admin}`).to.equal(admin ? 2 : 0);
      await page.goto(`${server.url}/dashboard/authorizations/${made.pending.id}`);
      await page.locator('[data-panel=authorization][data-state=ready]').waitFor();
      expect(await page.getByRole('button', { name: 'Approve' }).count(), `admin ${admin}`).to.equal(admin ? 1 : 0);
      if (!admin) {
        await page.goto(`${server.url}/dashboard/audit-log`);
        await page.locator('[data-panel=audit-log] [data-read-only]').waitFor();
        expect(await page.locator('[data-panel=audit-log]').textContent()).to.match(/admin key: the key “reader” has read/);
        expect(asked.filter((p) => p.startsWith('/api/v1/audit-log'))).to.deep.equal([]);
        await photograph(page, 'read-key-audit-log-wide');
      }
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }
    // Nothing was decided.
    expect((await api().get(`/api/v1/authorizations/${made.pending.id}`).set(...own.auth).expect(200)).body.status).to.equal('pending');
  });

  /** Buttons that change something: a key without admin must never find one of them enabled. */
  const CHANGES = ['New policy', 'Deactivate', 'Activate', 'Delete', 'Revoke', 'Resolve', 'Reopen', 'Save', 'Create policy', 'Send test', 'Turn off', 'Turn on', 'Send again', 'Create key', 'Add webhook'];

  /** The enabled controls of the page that change something. */
  const enabledChanges = (page: Page) =>
    page.evaluate(
      (names) =>
        [...document.querySelectorAll<HTMLButtonElement | HTMLAnchorElement>('button, a')]
          .filter((el) => names.includes(el.textContent!.trim()) || el.dataset.needs === 'admin')
          .filter((el) => !(el as HTMLButtonElement).disabled && !el.closest('fieldset:disabled'))
          .map((el) => el.textContent!.trim()),
      CHANGES,
    );

  it('a read key sees every page with no control it may not use: changes disabled with the reason, webhooks not offered, no retry of a refusal', async () => {
    const reading = await newTeam('dashboard-reader');
    await newPolicy(reading, SEEDED_POLICIES[1]!);
    await api().post('/api/v1/events').set(...reading.auth).send({ events: [{ ...seededRecord(36, from, to), id: 'big-1', amount: '2.25' }] }).expect(200);
    const hook = (await api().post('/api/v1/webhooks').set(...reading.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['alert.resolved'] }).expect(201)).body;
    const { apiKey: reader } = await keyWith(reading, { name: 'reader', scopes: ['read'] });
    const policyId = (await api().get('/api/v1/policies').set(...reading.auth).expect(200)).body.data[0].id;
    const alertId = (await api().get('/api/v1/alerts').query({ status: 'open', limit: 1 }).set(...reading.auth).expect(200)).body.data[0].id;
    for (const viewport of ['wide', 'phone'] as const) {
      const page = await newPage(viewport);
      await signIn(page, reader);
      await page.locator('[data-panel=totals][data-state=ready]').waitFor();
      for (const url of ['/dashboard/policies', `/dashboard/policies/${policyId}`, '/dashboard/policies/new', `/dashboard/alerts/${alertId}`, '/dashboard/team']) {
        await page.goto(`${server.url}${url}`);
        await settled(page);
        expect(await page.locator('section.panel[data-state=error]').count(), `${url}: panels in error`).to.equal(0);
        expect(await enabledChanges(page), `${url}: enabled changes`).to.deep.equal([]);
        // Said why, before any click.
        expect(await page.locator('[data-read-only]').first().textContent(), url).to.match(/admin key/);
        await photograph(page, `read-key-${url.split('/').slice(2).join('-')}-${viewport}`);
      }
      await page.goto(`${server.url}/dashboard/policies`);
      await settled(page);
      const row = page.locator(`[data-policy="${policyId}"]`);
      for (const name of ['Deactivate', 'Delete']) expect(await row.getByRole('button', { name }).isDisabled(), name).to.equal(true);
      expect(await page.getByRole('button', { name: 'New policy' }).isDisabled()).to.equal(true);
      expect(await page.getByRole('button', { name: 'New policy' }).getAttribute('title')).to.match(/admin key.*“reader” has read/);

      await page.goto(`${server.url}/dashboard/alerts/${alertId}`);
      await settled(page);
      expect(await page.getByRole('button', { name: 'Resolve' }).isDisabled()).to.equal(true);

      await page.goto(`${server.url}/dashboard/team`);
      await settled(page);
      expect(await page.getByRole('button', { name: 'Revoke' }).count()).to.be.greaterThan(0);
      for (const revoke of await page.getByRole('button', { name: 'Revoke' }).all()) expect(await revoke.isDisabled()).to.equal(true);
      expect(await page.getByText('Create a key').count()).to.equal(0);
      // Webhooks: not listed for a read key (the API would refuse), and nothing offered to click.
      expect(await page.locator('[data-panel=webhooks] button, [data-panel=webhooks] a').count()).to.equal(0);
      expect(await page.locator('[data-panel=webhooks]').textContent()).to.match(/admin key/);

      // A refusal is not offered again: no "Try again" for what cannot succeed.
      await page.goto(`${server.url}/dashboard/team/webhooks/${hook.id}`);
      await page.locator('[data-panel=webhook][data-state=error]').waitFor();
      expect(await page.locator('[data-panel=webhook] [role=alert]').textContent()).to.match(/admin/);
      expect(await page.getByRole('button', { name: 'Try again' }).count()).to.equal(0);
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }
    // Nothing was changed.
    expect((await api().get(`/api/v1/alerts/${alertId}`).set(...reading.auth).expect(200)).body.status).to.equal('open');
    expect((await api().get(`/api/v1/policies/${policyId}`).set(...reading.auth).expect(200)).body.active).to.equal(true);
  });

  it('alerts are rows: severity, a short title, agent, policy, observed against limit, window and count, latest raised first; the explanation on its own page', async () => {
    const listed = (await api().get('/api/v1/alerts').query({ limit: 50 }).set(...team.auth).expect(200)).body.data as {
      id: string;
      kind: string;
      severity: string;
      agentId: string;
      policyId: string | null;
      message: string;
      observed: string | null;
      limit: string | null;
      window: { start: string; end: string } | null;
      count: number;
      details: { policyName?: string };
    }[];
    // The seeded install raises alerts of several kinds: policy limits, the client's verdicts, anomalies.
    expect(new Set(listed.map((a) => a.kind)).size, listed.map((a) => a.kind).join()).to.be.at.least(4);
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(`${server.url}/dashboard/alerts`);
    await settled(page);
    await page.locator('[data-panel=alerts-list] [data-alert] .money .asset').first().waitFor();
    // The order is the API's (by when raised), and the column says so.
    expect(await page.locator('[data-panel=alerts-list] [data-alert]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-alert')))).to.deep.equal(listed.map((a) => a.id));
    expect(await page.locator('[data-panel=alerts-list] th[aria-sort=descending]').textContent()).to.match(/^Raised/);
    for (const alert of listed) {
      const row = page.locator(`[data-panel=alerts-list] [data-alert="${alert.id}"]`);
      const text = (await row.textContent())!;
      const title = (await row.locator('td.row-main a').textContent())!;
      expect(title.length, title).to.be.within(8, 60);
      expect(title, 'the title has no figures').to.not.match(/\d/);
      expect(text, 'the long explanation is not in the list').to.not.include(alert.message);
      expect(await row.locator('.badge').first().textContent()).to.equal(alert.severity);
      if (alert.agentId) expect(await row.locator('td[data-label=Agent]').textContent()).to.equal(alert.agentId);
      if (alert.policyId) expect(await row.locator('td[data-label=Policy]').textContent()).to.equal(alert.details.policyName);
      if (alert.observed !== null && alert.kind !== 'loop') {
        const amounts = row.locator('td[data-label=Observed] .money');
        expect(await amounts.first().getAttribute('data-exact')).to.equal(alert.observed);
        if (alert.limit !== null) expect(await amounts.nth(1).getAttribute('data-exact')).to.equal(alert.limit);
        // The seeded team pays only in USDC: every amount of its alerts is in it.
        expect(await amounts.first().textContent()).to.match(/ USDC$/);
      }
      const times = await row.locator('td[data-label=Window] time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')));
      expect(times).to.deep.equal(alert.window ? [alert.window.start, alert.window.end] : []);
      expect(await row.locator('td[data-label=Times]').textContent()).to.equal(String(alert.count));
    }
    // Its own page: the short title, then the service's explanation with its times in the one format.
    const windowed = listed.find((a) => a.window !== null && a.policyId !== null)!;
    await page.goto(`${server.url}/dashboard/alerts/${windowed.id}`);
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    const explanation = (await page.locator('[data-explanation]').textContent())!;
    expect(explanation).to.include(`policy "${windowed.details.policyName}"`);
    expect(windowed.message).to.match(/\d{4}-\d{2}-\d{2}T/);
    expect(explanation).to.not.match(/\d{4}-\d{2}-\d{2}T/);
    expect(explanation).to.match(/\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}/);
    await page.close();
  });

  it('one date format throughout: every time in the chosen zone as "24 Nov 2026, 05:59" or "5 h ago", and no other format on any page', async () => {
    const alertId = (await api().get('/api/v1/alerts').query({ limit: 1 }).set(...team.auth).expect(200)).body.data[0].id;
    const page = await newPage('wide');
    await signIn(page);
    const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
    for (const zone of ['UTC', 'America/St_Johns']) {
      for (const url of [`/dashboard/?${range}`, '/dashboard/agents', `/dashboard/agents/${AGENTS[0]}?${range}`, '/dashboard/alerts', `/dashboard/alerts/${alertId}`, '/dashboard/budgets', '/dashboard/policies', '/dashboard/team', '/dashboard/authorizations', `/dashboard/authorizations/${seededAuthorizationId}`, '/dashboard/records', '/dashboard/records/dash-36', '/dashboard/settlements', '/dashboard/audit-log']) {
        await page.goto(`${server.url}${url}`);
        await settled(page);
        if (url.startsWith('/dashboard/?')) {
          await page.locator('.zone select').selectOption(zone);
          await settled(page);
        }
        const texts = await page.locator('time').allTextContents();
        if (url !== '/dashboard/policies') expect(texts.length, `${url}: times shown`).to.be.greaterThan(0);
        for (const text of texts) expect(text, `${url}: a time`).to.match(TIME_TEXT);
        const shown = await page.evaluate(() => [document.body.innerText, ...[...document.querySelectorAll('[title]')].map((e) => e.getAttribute('title')!)]);
        for (const format of OTHER_DATE_FORMATS) for (const text of shown) expect(text, `${url}: ${format}`).to.not.match(format);
      }
      // In the chosen zone: an alert's window starts where the API says, written in that zone.
      const alert = (await api().get('/api/v1/alerts').query({ limit: 50 }).set(...team.auth).expect(200)).body.data.find((a: { window: unknown; kind: string }) => a.window && a.kind === 'daily');
      await page.goto(`${server.url}/dashboard/alerts/${alert.id}`);
      await page.locator('[data-panel=alert][data-state=ready]').waitFor();
      const start = page.locator(`[data-panel=alert] time[datetime="${alert.window.start}"]`);
      const expected = new Intl.DateTimeFormat('en-GB', { timeZone: zone, day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(alert.window.start));
      const part = (type: string) => expected.find((p) => p.type === type)!.value;
      expect(await start.textContent()).to.equal(`${part('day')} ${part('month')} ${part('year')}, ${part('hour')}:${part('minute')}`);
      expect(INSTANT.test((await start.textContent())!)).to.equal(true);
    }
    await page.close();
  });

  it('a figure summing several assets says so, with each asset\'s own total beside it', async () => {
    const mixed = await newTeam('dashboard-mixed');
    const events = [
      { id: 'm-1', agent_id: 'pay-bot', endpoint: 'https://api.example.com/a', method: 'GET', amount: '1.25', asset: 'USDC', network: BASE, created_at: from + HOUR },
      { id: 'm-2', agent_id: 'pay-bot', endpoint: 'https://api.example.com/a', method: 'GET', amount: '2.5', asset: 'EURC', network: BASE, created_at: from + 2 * HOUR },
      { id: 'm-3', agent_id: 'pay-bot', endpoint: 'https://api.example.com/a', method: 'GET', amount: '0.004', asset: 'USDC', network: SOLANA, created_at: from + 3 * HOUR },
      { id: 'm-4', agent_id: 'tiny-bot', endpoint: 'https://api.example.com/b', method: 'GET', amount: '0.000123456', asset: 'USDC', network: SOLANA, created_at: from + 4 * HOUR },
    ];
    await api().post('/api/v1/events').set(...mixed.auth).send({ events }).expect(200);
    const page = await newPage('wide');
    await signIn(page, mixed.apiKey);
    await page.goto(overviewUrl());
    await page.locator('[data-asset-split]').waitFor();
    expect(await page.locator('[data-field=totalSpend] .money').textContent()).to.equal('3.75 EURC+USDC');
    expect(await page.locator('[data-field=totalSpend] .money').getAttribute('title')).to.match(/sum of amounts in EURC, USDC/);
    // By value first: USDC is worth its amount in USD; EURC has no rate into USD here (unvalued, said beside the total value).
    expect(await page.locator('[data-asset-split] .money').allTextContents()).to.deep.equal(['1.25 USDC', '2.50 EURC']);
    expect(await page.locator('[data-field=totalValue] .money').getAttribute('data-exact')).to.equal('1.254123456');
    expect(await page.locator('[data-field=totalValue]').textContent()).to.include('1 unvalued');
    await page.goto(`${server.url}/dashboard/agents`);
    await page.locator('[data-agent=pay-bot] .money .asset').waitFor();
    expect(await page.locator('[data-agent=pay-bot] .money').textContent()).to.equal('3.75 EURC+USDC');
    // Below 1, two significant digits: the size of a small payment stays readable.
    expect(await page.locator('[data-agent=tiny-bot] .money').textContent()).to.equal('0.00012 EURC+USDC');
    expect(await page.locator('[data-agent=tiny-bot] .money').getAttribute('data-exact')).to.equal('0.000123456');
    await page.close();
  });

  it('each panel has its own empty and error states; a failed panel retries on its own, the others unharmed', async () => {
    const empty = await newTeam('dashboard-empty');
    const page = await newPage('wide');
    await signIn(page, empty.apiKey);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.locator('[data-panel=agents][data-state=ready] .state.empty').waitFor();
    expect(await page.locator('[data-panel=open-alerts] .state.empty').textContent()).to.equal('No open alerts.');
    expect(await page.locator('[data-panel=totals] [data-field=totalSpend] .value').textContent()).to.equal('0.00');

    // The network answer of one panel fails (the service itself never does): that panel says so.
    let failing = true;
    await page.route('**/api/v1/analytics/by-network*', (route) =>
      failing ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'store_unavailable', message: 'ClickHouse did not answer', requestId: 'x' } }) }) : route.continue(),
    );
    await page.reload();
    await page.locator('[data-panel=networks][data-state=error]').waitFor();
    expect(await page.locator('[data-panel=networks] [role=alert] p').textContent()).to.equal('ClickHouse did not answer');
    await page.locator('[data-panel=categories][data-state=ready]').waitFor();
    failing = false;
    await page.locator('[data-panel=networks]').getByRole('button', { name: 'Try again' }).click();
    await page.locator('[data-panel=networks][data-state=ready]').waitFor();
    await page.close();
  });

  it('panels refresh every 10 s while the tab is visible, and not while it is hidden', async () => {
    const page = await newPage('wide');
    await page.clock.install();
    await signIn(page);
    await page.locator('[data-panel=totals][data-state=ready]').waitFor();
    let summaries = 0;
    page.on('request', (request) => request.url().includes('/api/v1/analytics/summary') && summaries++);
    await page.clock.runFor(10_500);
    await page.waitForFunction(() => document.querySelector('[data-panel=totals]')?.getAttribute('data-state') === 'ready');
    await page.waitForTimeout(200);
    expect(summaries).to.equal(1);
    await page.clock.runFor(10_000);
    await page.waitForTimeout(200);
    expect(summaries).to.equal(2);
    // A hidden tab asks for nothing.
    await page.evaluate(() => Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true }));
    await page.clock.runFor(30_000);
    await page.waitForTimeout(200);
    expect(summaries).to.equal(2);
    await page.close();
  });

  /**
   * Interactive elements a person cannot fully see: outside the viewport sideways, or cut by an
   * ancestor that clips or scrolls (a control one must scroll a box sideways to find is clipped).
   */
  const clippedControls = (page: Page) =>
    page.evaluate(() => {
      const problems: string[] = [];
      const width = window.innerWidth;
      for (const el of document.querySelectorAll<HTMLElement>('a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])')) {
        // The skip link waits off-screen until it is focused, by design.
        if (el.classList.contains('skip')) continue;
        const box = el.getBoundingClientRect();
        if ((box.width === 0 && box.height === 0) || getComputedStyle(el).visibility === 'hidden') continue;
        const name = `${el.tagName.toLowerCase()} "${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 40)}"`;
        if (box.left < -0.5 || box.right > width + 0.5) {
          problems.push(`${name} outside the viewport (${Math.round(box.left)} to ${Math.round(box.right)} of ${width})`);
          continue;
        }
        for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
          const style = getComputedStyle(up);
          const edges = up.getBoundingClientRect();
          const sideways = style.overflowX !== 'visible' && (box.left < edges.left - 0.5 || box.right > edges.right + 0.5);
          const downwards = /hidden|clip/.test(style.overflowY) && (box.top < edges.top - 0.5 || box.bottom > edges.bottom + 0.5);
          if (sideways || downwards) {
            problems.push(`${name} clipped by ${up.tagName.toLowerCase()}.${[...up.classList].join('.')}`);
            break;
          }
        }
      }
      return problems;
    });

  it('every page renders at 1280 px and on a 390 px phone screen, loaded, nothing scrolling sideways and no control clipped, with no errors in the page', async () => {
    const alertId = (await api().get('/api/v1/alerts').query({ limit: 1 }).set(...team.auth).expect(200)).body.data[0].id;
    const policyId = (await api().get('/api/v1/policies').set(...team.auth).expect(200)).body.data[0].id;
    const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
    const pages: [string, string][] = [
      ['overview', `/dashboard/?${range}`],
      ['overview-preset', '/dashboard/?range=7d'],
      ['agents', '/dashboard/agents'],
      ['agent', `/dashboard/agents/${AGENTS[0]}?${range}`],
      ['alerts', '/dashboard/alerts'],
      ['alert', `/dashboard/alerts/${alertId}`],
      ['budgets', '/dashboard/budgets'],
      ['budgets-policy', `/dashboard/budgets?policy_id=${policyId}`],
      ['policies', '/dashboard/policies'],
      ['policy', `/dashboard/policies/${policyId}`],
      ['policy-new', '/dashboard/policies/new'],
      ['team', '/dashboard/team'],
      ['authorizations', '/dashboard/authorizations'],
      ['authorizations-declined', '/dashboard/authorizations?status=declined'],
      ['authorization', `/dashboard/authorizations/${seededAuthorizationId}`],
      ['records', '/dashboard/records'],
      ['records-filtered', `/dashboard/records?agent=${AGENTS[1]}&endpoint=example&${range}`],
      ['record', '/dashboard/records/dash-36'],
      // No chain in this install: the page says reconciliation is off.
      ['settlements', '/dashboard/settlements'],
      ['audit-log', '/dashboard/audit-log'],
      ['rates', '/dashboard/rates'],
    ];
    for (const viewport of ['wide', 'phone'] as const) {
      const page = await newPage(viewport);
      await signIn(page);
      for (const [name, url] of pages) {
        await page.goto(`${server.url}${url}`);
        await settled(page);
        expect(await page.locator('section.panel[data-state=error]').count(), `${name}: panels in error`).to.equal(0);
        // Nothing wider than the screen: the page never scrolls sideways.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `${name} at ${viewport}: sideways overflow`).to.be.at.most(0);
        expect(await clippedControls(page), `${name} at ${viewport}: controls not fully shown`).to.deep.equal([]);
        await photograph(page, `${name}-${viewport}`);
      }
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }
  });

  it('the screenshots in the docs (overview, an agent, alerts, budgets, policies at 1280 px) are taken from the seeded install', async () => {
    // Into docs/images with DOCS_IMAGES=1 (npm run docs:images); otherwise beside the other
    // screenshots, so an ordinary test run leaves the checkout clean (each run has new dates).
    const dir = process.env.DOCS_IMAGES === '1' ? DOCS_IMAGE_DIR : path.join(SCREENSHOT_DIR, 'docs');
    fs.mkdirSync(dir, { recursive: true });
    const page = await newPage('wide');
    await signIn(page);
    await page.evaluate(() => sessionStorage.setItem('spendscope.timeZone', 'UTC'));
    const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
    const shots: [string, string][] = [
      ['overview', `/dashboard/?${range}`],
      ['agent', `/dashboard/agents/${AGENTS[0]}?${range}`],
      ['alerts', '/dashboard/alerts'],
      ['budgets', '/dashboard/budgets'],
      ['policies', '/dashboard/policies'],
    ];
    for (const [name, url] of shots) {
      await page.goto(`${server.url}${url}`);
      await settled(page);
      // Amounts with their assets, not the moment before the assets arrive: every request answered.
      await page.locator('.money .asset').first().waitFor();
      await page.waitForLoadState('networkidle');
      const file = path.join(dir, `${name}.png`);
      fs.rmSync(file, { force: true });
      await page.screenshot({ fullPage: true, path: file });
      const stats = renderStats(fs.readFileSync(file));
      expect(stats.width, name).to.equal(1280);
      expect(stats.inkShare, `${name}: share of non-background pixels`).to.be.greaterThan(0.02);
      expect(stats.colours, `${name}: distinct colours`).to.be.greaterThan(20);
    }
    await page.close();
  });

  it('keyboard: every section is reachable with Tab, and a focused link opens with Enter', async () => {
    const page = await newPage('wide');
    await signIn(page);
    // The admin key's menu ends with the audit log.
    const sections = ['Overview', 'Agents', 'Alerts', 'Authorizations', 'Records', 'Settlements', 'Budgets', 'Policies', 'Rates', 'Team', 'Audit log'];
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit log' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents()).to.deep.equal(sections);
    const reached = new Set<string>();
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      const text = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.textContent?.trim() ?? '');
      reached.add(text);
      if (text === 'Records') break;
    }
    expect([...reached]).to.include.members(sections.slice(0, 5));
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/dashboard\/records$/);
    for (let i = 0; i < 20 && !reached.has('Audit log'); i++) {
      await page.keyboard.press('Tab');
      reached.add(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.textContent?.trim() ?? ''));
    }
    expect([...reached]).to.include.members(sections);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/dashboard\/audit-log$/);
    await page.locator('[data-panel=audit-log][data-state=ready]').waitFor();
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
