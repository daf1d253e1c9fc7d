/**
 * The dashboard in a real browser (Chromium through playwright-core) against the real service and
 * stores of the test run, on a store seeded through the API. Each page is photographed at 1280 px
 * and on a 390 px phone screen under test-output/dashboard, and each photo is checked for a render.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { api, listenOnce, newTeam } from '../helpers/context.js';
import { launchBrowser, renderStats, SCREENSHOT_DIR, VIEWPORTS } from '../helpers/browser.js';

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

  /** Waits until no panel of the page is loading. */
  async function settled(page: Page): Promise<void> {
    await page.locator('section.panel').first().waitFor();
    await page.waitForFunction(() => document.querySelectorAll('section.panel[data-state=loading]').length === 0);
  }

  it("an agent's page: its figures, its spend over time, its endpoints and its alerts, as the API gives them", async () => {
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
    await page.close();
  });

  it('resolve an alert with a note, and it is resolved through the API; reopen it', async () => {
    const page = await newPage('wide');
    await signIn(page);
    await page.goto(`${server.url}/dashboard/alerts?status=open`);
    await settled(page);
    const first = page.locator('[data-panel=alerts-list] [data-alert]').first();
    const alertId = (await first.getAttribute('data-alert'))!;
    await first.locator('a').click();
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
    await page.getByLabel('Amount').fill('12.5.0');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const fieldError = page.locator('[data-field-error="limits[0].amount"]');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).to.include('must be a decimal string');
    expect(await page.locator('input[name="limits[0].amount"]').getAttribute('aria-invalid')).to.equal('true');
    let listed = (await api().get('/api/v1/policies').set(...team.auth).expect(200)).body.data;
    expect(listed.map((p: { name: string }) => p.name)).to.not.include('browser budget');

    await page.getByLabel('Amount').fill('12.500000000000000001');
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
      await api().get('/api/v1/team').set('Authorization', `Bearer ${secret}`).expect(200);
      await api().post('/api/v1/policies').set('Authorization', `Bearer ${secret}`).send({ name: 'x', limits: [{ kind: 'daily', amount: '1' }] }).expect(403);
      const keys = (await api().get('/api/v1/keys').set(...team.auth).expect(200)).body.data;
      const grafana = keys.find((k: { name: string }) => k.name === 'grafana');
      expect(grafana.scopes).to.deep.equal(['read']);
      page.once('dialog', (dialog) => void dialog.accept());
      await page.locator(`[data-key="${grafana.id}"]`).getByRole('button', { name: 'Revoke' }).click();
      await page.locator(`[data-key="${grafana.id}"]`).waitFor({ state: 'detached' });
      await api().get('/api/v1/team').set('Authorization', `Bearer ${secret}`).expect(401);

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

  it('a read key looks at everything; a change it tries shows the refusal and changes nothing', async () => {
    const reader = (await api().post('/api/v1/keys').set(...team.auth).send({ name: 'reader', scopes: ['read'] }).expect(201)).body.apiKey;
    const alertId = (await api().get('/api/v1/alerts').query({ status: 'open', limit: 1 }).set(...team.auth).expect(200)).body.data[0].id;
    const page = await newPage('wide');
    await page.goto(`${server.url}/`);
    await page.getByLabel('API key').fill(reader);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('[data-panel=totals][data-state=ready]').waitFor();
    await page.goto(`${server.url}/dashboard/alerts/${alertId}`);
    await page.locator('[data-panel=alert][data-state=ready]').waitFor();
    await page.getByRole('button', { name: 'Resolve' }).click();
    const refusal = page.locator('[data-panel=alert] .field-error[role=alert]');
    await refusal.waitFor();
    expect(await refusal.textContent()).to.match(/admin/);
    expect((await api().get(`/api/v1/alerts/${alertId}`).set(...team.auth).expect(200)).body.status).to.equal('open');
    await page.close();
  });

  it('each panel has its own empty and error states; a failed panel retries on its own, the others unharmed', async () => {
    const empty = newTeam('dashboard-empty');
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

  it('every page renders at 1280 px and on a 390 px phone screen, loaded, with no errors in the page', async () => {
    const alertId = (await api().get('/api/v1/alerts').query({ limit: 1 }).set(...team.auth).expect(200)).body.data[0].id;
    const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
    const pages: [string, string][] = [
      ['overview', `/dashboard/?${range}`],
      ['agents', '/dashboard/agents'],
      ['agent', `/dashboard/agents/${AGENTS[0]}?${range}`],
      ['alerts', '/dashboard/alerts'],
      ['alert', `/dashboard/alerts/${alertId}`],
      ['policies', '/dashboard/policies'],
      ['policy-new', '/dashboard/policies/new'],
      ['team', '/dashboard/team'],
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
        await photograph(page, `${name}-${viewport}`);
      }
      expect((page as Page & { problems: string[] }).problems).to.deep.equal([]);
      await page.close();
    }
  });

  it('keyboard: every section is reachable with Tab, and a focused link opens with Enter', async () => {
    const page = await newPage('wide');
    await signIn(page);
    const reached = new Set<string>();
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const text = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.textContent?.trim() ?? '');
      reached.add(text);
      if (text === 'Alerts') break;
    }
    expect([...reached]).to.include.members(['Overview', 'Agents', 'Alerts']);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/dashboard\/alerts$/);
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
