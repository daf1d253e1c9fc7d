/**
 * The Settlements page and the Records page's settlement column in a real browser, against real
 * settlements: records checked on the shared local chain by a verifier the tests cycle
 * (test/helpers/settlements.ts). Apart from browser.test.ts, whose seeded install has no chain.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { NETWORK } from '../../scripts/x402-stack/chain.js';
import { createApp, type App } from '../../src/app.js';
import type { Reconciler } from '../../src/settlements/reconciler.js';
import { sendRecords, type Team } from '../helpers/common.js';
import { api, listenOnce, testEnv } from '../helpers/context.js';
import { launchBrowser, renderStats, SCREENSHOT_DIR, VIEWPORTS } from '../helpers/browser.js';
import { chainActions, settlementsOf, settleUntil, teamWithToken as teamWith, testChains, testReconciler, type ChainActions, type SettlementEntry } from '../helpers/settlements.js';
import { x402Stack } from '../helpers/x402.js';

type Entry = { id: string; record_id: string | null; status: string; tx_hash: string; note: string | null; observed: Record<string, any> | null };
type Summary = { networks: unknown[]; currency: string; statuses: { status: string; count: number; value: string; assets: { asset: string; reported: string; observed: string }[] }[]; unreported_settlement: { count: number; value: string } };

const PAYEE = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d').address;
const INVENTED = `0x${'ab'.repeat(32)}`;

describe('dashboard in a browser: settlements', function () {
  this.timeout(120_000);
  let browser: Browser;
  let chain: ChainActions;
  let recon: Reconciler;
  /** The service as it runs with CHAIN_RPC_URLS (its summary names the network), and as it runs without. */
  let onApp: App;
  let on: { url: string; close: () => Promise<void> };
  let off: { url: string; close: () => Promise<void> };
  let team: Team;
  let paid: Hex;

  before(async function () {
    this.timeout(180_000);
    chain = chainActions(await x402Stack());
    recon = testReconciler(chain.url);
    browser = await launchBrowser();
    const env = testEnv();
    onApp = createApp({ ...env.deps, config: { ...env.config, chains: testChains(chain.url) } }, { validateResponses: true });
    on = await listenOnce(onApp);
    off = await listenOnce();
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });

    // A true record, one with the wrong amount, an invented hash, one on a network with no RPC, one without a hash.
    team = await teamWithToken('settle-page');
    const payer = await chain.wallet();
    paid = await chain.transfer(payer, PAYEE, 10_000n);
    const base = { tx_hash: paid, payer_address: payer.address, payee_address: PAYEE };
    await sendRecords(team, [
      record('sp-true', base),
      record('sp-wrong', { ...base, amount: '0.02' }),
      record('sp-invented', { tx_hash: INVENTED }),
      record('sp-elsewhere', { tx_hash: INVENTED, network: 'eip155:999999' }),
      record('sp-bare', {}),
    ]);
    await until(team, (e) => e.length === 4 && e.every((x) => x.status !== 'pending'));
  });

  after(async () => {
    await recon?.close();
    await browser?.close();
    await on?.close();
    await off?.close();
  });

  const teamWithToken = (label: string) => teamWith(label, chain.token);

  const record = (id: string, fields: Record<string, unknown>) => ({ id, agent_id: 'payer-bot', amount: '0.01', created_at: Date.now(), network: NETWORK, asset: chain.token, ...fields });

  const settlements = (t: Team) => settlementsOf(t) as Promise<Entry[]>;

  /** Cycles the verifier until `done` holds of the team's settlements (after its records are loaded). */
  const until = (t: Team, done: (entries: Entry[]) => boolean) => settleUntil(t, recon, done as (e: SettlementEntry[]) => boolean) as Promise<Entry[]>;

  async function signedIn(server: { url: string }, t: Team, viewport: keyof typeof VIEWPORTS = 'wide'): Promise<Page & { problems: string[] }> {
    const page = Object.assign(await browser.newPage({ viewport: VIEWPORTS[viewport] }), { problems: [] as string[] });
    page.on('pageerror', (err) => page.problems.push(err.message));
    await page.goto(`${server.url}/`);
    await page.getByLabel('API key').fill(t.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    return page;
  }

  /** Photographs the page, checks the photo is a render, and that nothing scrolls sideways. */
  async function photograph(page: Page, name: string): Promise<void> {
    const stats = renderStats(await page.screenshot({ fullPage: true, path: path.join(SCREENSHOT_DIR, `${name}.png`) }));
    expect(stats.inkShare, `${name}: share of non-background pixels`).to.be.greaterThan(0.02);
    expect(stats.colours, `${name}: distinct colours`).to.be.greaterThan(20);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), `${name}: sideways overflow`).to.be.at.most(0);
  }

  const texts = (page: Page, selector: string) => page.locator(selector).evaluateAll((els) => els.map((e) => e.textContent!.trim()));

  it('the Settlements page: counts, value and per-token sums per status as GET /settlements/summary gives them, the networks checked; a mismatch\'s difference and the notes in the list; the status filter', async () => {
    const summary = (await api(onApp).get('/api/v1/settlements/summary').set(...team.auth).expect(200)).body as Summary;
    const of = (status: string) => summary.statuses.find((s) => s.status === status)!;
    expect(of('verified')).to.deep.include({ count: 1, value: '0.01', assets: [{ asset: chain.token.toLowerCase(), reported: '0.01', observed: '0.01' }] });
    expect(of('mismatch')).to.deep.include({ count: 1, value: '0.02', assets: [{ asset: chain.token.toLowerCase(), reported: '0.02', observed: '0.01' }] });
    expect(of('not_found')).to.deep.include({ count: 1 });
    expect(summary.unreported_settlement).to.deep.include({ count: 1, value: '0.01' });

    for (const viewport of ['wide', 'phone'] as const) {
      const page = await signedIn(on, team, viewport);
      await page.goto(`${on.url}/dashboard/settlements`);
      await page.locator('[data-panel=settlement-summary][data-state=ready] [data-summary-status]').first().waitFor();
      expect(await page.locator('[data-reconciliation=off]').count()).to.equal(0);
      expect(await page.locator('[data-networks]').textContent()).to.contain(`${NETWORK} (1 confirmation)`);
      // Each status the API counts, in its order, then the records without a hash.
      expect(await page.locator('[data-summary-status]').evaluateAll((els) => els.map((e) => e.getAttribute('data-summary-status')))).to.deep.equal([...summary.statuses.map((s) => s.status), 'unreported_settlement']);
      for (const s of summary.statuses) {
        const row = page.locator(`[data-summary-status=${s.status}]`);
        expect(await row.locator('[data-count]').getAttribute('data-count'), s.status).to.equal(String(s.count));
        expect(await row.locator('td[data-label^=Value] .money').getAttribute('data-exact'), s.status).to.equal(s.value);
        for (const side of ['reported', 'observed'] as const) {
          const shown = await row.locator(`[data-sums=${side}] [data-asset]`).evaluateAll((els) => els.map((e) => [e.getAttribute('data-asset'), e.querySelector('[data-amount]')!.getAttribute('data-amount')]));
          expect(shown, `${s.status} ${side}`).to.deep.equal(s.assets.filter((a) => /[1-9]/.test(a[side])).map((a) => [a.asset, a[side]]));
        }
      }
      const bare = page.locator('[data-summary-status=unreported_settlement]');
      expect(await bare.locator('[data-count]').getAttribute('data-count')).to.equal('1');
      expect(await bare.textContent()).to.contain('no tx');
      expect(await page.locator('[data-summary-status=mismatch] td[data-label^=Value] .money').textContent()).to.equal('0.02 USD');

      // The entries: what differs for the mismatch, the note for the others.
      await page.locator('[data-panel=settlements][data-state=ready]').waitFor();
      expect(await page.locator('[data-panel=settlements] [data-settlement]').evaluateAll((els) => els.map((e) => e.getAttribute('data-settlement')).sort())).to.deep.equal(['r:sp-elsewhere', 'r:sp-invented', 'r:sp-true', 'r:sp-wrong']);
      const wrong = page.locator('[data-settlement="r:sp-wrong"]');
      expect(await wrong.locator('[data-settlement-status]').textContent()).to.equal('mismatch');
      expect(await wrong.locator('[data-difference=amount] [data-reported]').textContent()).to.equal('0.02');
      expect(await wrong.locator('[data-difference=amount] [data-observed]').textContent()).to.equal('0.01');
      expect(await wrong.locator('[data-settlement-status]').getAttribute('title')).to.contain('amount: reported 0.02, observed 0.01');
      expect(await page.locator('[data-settlement="r:sp-invented"] [data-note]').textContent()).to.match(/^no such transaction after 2 s/);
      expect(await page.locator('[data-settlement="r:sp-elsewhere"] [data-note]').textContent()).to.equal('no RPC is configured for eip155:999999 (CHAIN_RPC_URLS)');
      expect(await page.locator('[data-settlement="r:sp-elsewhere"] [data-settlement-status]').textContent()).to.equal('unverifiable');
      expect(await page.locator('[data-settlement="r:sp-true"] [data-settlement-status]').textContent()).to.equal('verified');
      // No payment without its record for this team: said so, quietly.
      expect(await page.locator('[data-panel=unreported] .state.empty').count()).to.equal(1);
      await photograph(page, `settlements-${viewport}`);
      expect(page.problems).to.deep.equal([]);
      await page.close();
    }

    // The status filter asks the API for that status; the summary's count links to it.
    const page = await signedIn(on, team);
    await page.goto(`${on.url}/dashboard/settlements`);
    await page.locator('[data-summary-status=mismatch] a').click();
    await page.waitForURL(/status=mismatch/);
    await page.locator('[data-panel=settlements][data-state=ready]').waitFor();
    expect(await page.locator('[data-panel=settlements] [data-settlement]').evaluateAll((els) => els.map((e) => e.getAttribute('data-settlement')))).to.deep.equal(['r:sp-wrong']);
    await page.locator('select[name=status]').selectOption('not_found');
    await page.waitForURL(/status=not_found/);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-panel=settlements] [data-settlement]')].map((e) => e.getAttribute('data-settlement')).join() === 'r:sp-invented');
    await page.close();
  });

  it("the Records page: each record's settlement from one POST /records/settlements per page: its status, what differs on hover, \"no tx\" without a hash, \"waiting\" before it is taken in; the record's page", async () => {
    // A record with a hash stored after the last cycle: not taken in yet.
    await sendRecords(team, [record('sp-late', { tx_hash: `0x${'cd'.repeat(32)}` })]);
    await testEnv().deps.readEvents(team.teamId);
    const page = await signedIn(on, team);
    const asked: string[][] = [];
    page.on('request', (req) => req.url().endsWith('/api/v1/records/settlements') && asked.push((JSON.parse(req.postData()!) as { ids: string[] }).ids));
    await page.goto(`${on.url}/dashboard/records`);
    await page.locator('[data-panel=records][data-state=ready]').waitFor();
    await page.locator('td[data-settlement] [data-settlement-status]').first().waitFor();
    const cell = (id: string) => page.locator(`td[data-settlement="${id}"] [data-settlement-status]`);
    const expected: Record<string, string> = { 'sp-true': 'verified', 'sp-wrong': 'mismatch', 'sp-invented': 'not found', 'sp-elsewhere': 'unverifiable', 'sp-bare': 'no tx', 'sp-late': 'waiting' };
    for (const [id, text] of Object.entries(expected)) expect(await cell(id).textContent(), id).to.equal(text);
    expect(await cell('sp-wrong').getAttribute('title')).to.contain('amount: reported 0.02, observed 0.01');
    expect(await cell('sp-invented').getAttribute('title')).to.match(/no such transaction after 2 s/);
    // One request for the page, for the records that carry a hash.
    expect(asked.map((ids) => [...ids].sort())).to.deep.equal([['sp-elsewhere', 'sp-invented', 'sp-late', 'sp-true', 'sp-wrong']]);
    await photograph(page, 'records-settlement-wide');

    await page.goto(`${on.url}/dashboard/records/sp-wrong`);
    await page.locator('[data-panel=record] [data-field=settlement] [data-settlement-status]').waitFor();
    const facts = page.locator('[data-panel=record] [data-field=settlement]');
    expect(await facts.locator('[data-settlement-status]').textContent()).to.equal('mismatch');
    expect(await facts.locator('[data-difference=amount]').textContent()).to.equal('amount: reported 0.02, observed 0.01');
    expect(await facts.locator('[data-on-chain]').textContent()).to.contain(`block ${(await settlements(team)).find((e) => e.record_id === 'sp-wrong')!.observed!.block_number}`);
    expect(page.problems).to.deep.equal([]);
    await page.close();
  });

  it('a payment from a registered wallet that no record claims is shown first and prominently: agent, amount, payee, transaction, block; its alert says so', async () => {
    const own = await teamWithToken('settle-page-wallet');
    const wallet = await chain.wallet();
    await api().post('/api/v1/agents').set(...own.auth).send({ external_id: 'walleted', name: 'Walleted' }).expect(201);
    await api().patch('/api/v1/agents/walleted').set(...own.auth).send({ wallets: [{ network: NETWORK, address: wallet.address }] }).expect(200);
    await recon.cycle(); // the wallet is followed from the current block on
    const unclaimed = (await chain.transfer(wallet, PAYEE, 7_000n)).toLowerCase();
    const entries = await until(own, (e) => e.some((x) => x.status === 'unreported'));
    const entry = entries.find((e) => e.status === 'unreported')!;
    expect(entry).to.deep.include({ record_id: null, tx_hash: unclaimed });

    const page = await signedIn(on, own);
    await page.goto(`${on.url}/dashboard/settlements`);
    const panel = page.locator('[data-panel=unreported][data-state=ready]');
    await panel.locator('[data-unreported]').waitFor();
    // First of the panels, marked.
    expect(await page.locator('section.panel').first().getAttribute('data-panel')).to.equal('unreported');
    expect(await panel.getAttribute('class')).to.contain('alarming');
    expect(await panel.locator('h2').textContent()).to.equal('Payments no record claims: 1');
    const row = panel.locator(`[data-unreported="${unclaimed}"]`);
    expect(await row.locator('td[data-label=Agent]').textContent()).to.equal('walleted');
    expect(await row.locator('td[data-label=Transaction] [data-full]').getAttribute('data-full')).to.equal(unclaimed);
    expect(await row.locator('td[data-label=Payee] [data-full]').getAttribute('data-full')).to.equal(PAYEE.toLowerCase());
    expect(await row.locator('td[data-label=Block]').textContent()).to.equal(String(entry.observed!.block_number));
    // The amount as the API gives it: in the token's units when it says them, else its smallest units, said so.
    const amount = row.locator('td[data-label=Amount] .token-amount');
    if (entry.observed!.amount === null) expect(await amount.textContent()).to.match(/^7000 smallest units of 0x/);
    else expect(await amount.getAttribute('data-amount')).to.equal(entry.observed!.amount);
    expect(await amount.locator('[data-full]').getAttribute('data-full')).to.equal(chain.token.toLowerCase());
    // In the list too, with no record.
    const listed = page.locator(`[data-panel=settlements] [data-settlement="${entry.id}"]`);
    expect(await listed.locator('[data-settlement-status]').textContent()).to.equal('unreported');
    expect(await listed.locator('td[data-label=Record]').textContent()).to.match(/^no record/);
    await photograph(page, 'settlements-unreported-wide');
    // Its alert, titled for what it is.
    await page.goto(`${on.url}/dashboard/alerts?type=settlement`);
    await page.locator('[data-panel=alerts-list][data-state=ready] [data-alert]').first().waitFor();
    expect(await texts(page, '[data-panel=alerts-list] [data-alert] td.row-main a')).to.deep.equal(['Payment no record claims']);
    expect(page.problems).to.deep.equal([]);
    await page.close();
  });

  it('without CHAIN_RPC_URLS the page says plainly that reconciliation is off and how to turn it on', async () => {
    const page = await signedIn(off, team);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Settlements' }).click();
    await page.waitForURL(/\/dashboard\/settlements$/);
    const notice = page.locator('[data-reconciliation=off]');
    await notice.waitFor();
    expect(await notice.textContent()).to.match(/^Reconciliation is off:/);
    expect(await notice.locator('code').allTextContents()).to.deep.equal(['CHAIN_RPC_URLS', '{"eip155:8453": "https://mainnet.base.org"}', 'docs/reconciliation.md']);
    expect(await page.locator('[data-networks]').textContent()).to.match(/^No network is checked\./);
    await photograph(page, 'settlements-off-wide');
    expect(await texts(page, '[data-panel] h2')).to.deep.equal(['Payments no record claims: 0', 'Records against the chain, by status', 'Settlements, newest first']);
    expect(page.problems).to.deep.equal([]);
    await page.close();
  });
});
