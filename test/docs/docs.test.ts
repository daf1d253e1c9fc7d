/** /docs: a strict Content-Security-Policy on the page and every file, and only the files the page needs. */
import { expect } from 'chai';
import fs from 'node:fs';
import type { Browser } from 'playwright-core';
import { DOCS_HEADERS, VIEWER_FILES } from '../../src/docs/page.js';
import { api, errorOf, listenOnce } from '../helpers/context.js';
import { CHROMIUM_PATH, launchBrowser } from '../helpers/browser.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** Asserts the security headers of /docs on one response. */
function expectDocsHeaders(res: { headers: Record<string, string> }, what: string, csp = CSP): void {
  expect(res.headers['content-security-policy'], what).to.equal(csp);
  expect(res.headers['x-frame-options'], what).to.equal('DENY');
  expect(res.headers['x-content-type-options'], what).to.equal('nosniff');
  expect(res.headers['referrer-policy'], what).to.equal('no-referrer');
}

describe('/docs', function () {
  this.timeout(60_000);

  it('the page, its script and each viewer file carry the strict CSP and the other security headers', async () => {
    expect(DOCS_HEADERS['Content-Security-Policy']).to.equal(CSP);
    const redirect = await api().get('/docs').expect(301);
    // express.static's redirect to /docs/ sets a stricter policy of its own: a redirect runs nothing.
    expectDocsHeaders(redirect, '/docs', "default-src 'none'");
    const page = await api().get('/docs/').expect(200).expect('Content-Type', /html/);
    expectDocsHeaders(page, '/docs/');
    for (const file of ['init.js', ...[...VIEWER_FILES].map((f) => `assets/${f}`)]) {
      const res = await api().get(`/docs/${file}`).expect(200);
      expectDocsHeaders(res, file);
    }
    expect((await api().get('/docs/assets/swagger-ui-bundle.js').expect(200)).headers['content-type']).to.match(/javascript/);
  });

  it('the page has no inline script or style, and every file it loads is served', async () => {
    const html = (await api().get('/docs/').expect(200)).text;
    expect(html).to.not.match(/<style\b/i);
    expect(html).to.not.match(/\sstyle=/i);
    expect(html).to.not.match(/\son[a-z]+=/i);
    for (const [, attributes = '', body] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
      expect(attributes, 'every script is a file').to.match(/\ssrc="/);
      expect(body!.trim()).to.equal('');
    }
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources).to.include.members(['assets/swagger-ui.css', 'assets/swagger-ui-bundle.js', 'init.js', 'assets/favicon-32x32.png']);
    for (const source of sources) await api().get(`/docs/${source}`).expect(200);
  });

  it("swagger-ui-dist's demo page and the files the page does not load are 404s in the error shape", async () => {
    // The files exist in the package: only the list keeps them from being served.
    for (const file of ['index.html', 'swagger-initializer.js', 'oauth2-redirect.html', 'swagger-ui-bundle.js.map', 'package.json', 'swagger-ui.js', 'index.css', 'swagger-ui-standalone-preset.js']) {
      const res = await api().get(`/docs/assets/${file}`).expect(404);
      expect(errorOf(res.body).code, file).to.equal('not_found');
      expectDocsHeaders(res, file);
    }
    for (const odd of ['/docs/assets/', '/docs/assets/..%2Fpackage.json', '/docs/assets/%2e%2e/package.json', '/docs/assets/a/swagger-ui.css', '/docs/assets/.bin']) {
      await api().get(odd).expect(404);
    }
  });

  it('the page script asks for /openapi.json, which is served to it', async () => {
    const init = (await api().get('/docs/init.js').expect(200)).text;
    expect(init).to.include("url: '../openapi.json'");
    expect(init).to.include('validatorUrl: null');
    const document = await api().get('/openapi.json').expect(200);
    expect(document.body.openapi).to.match(/^3\.1/);
  });

  describe('in a browser', () => {
    let browser: Browser | undefined;
    let server: { url: string; close: () => Promise<void> };
    before(async function () {
      if (!fs.existsSync(CHROMIUM_PATH)) this.skip();
      browser = await launchBrowser();
      server = await listenOnce();
    });
    after(async () => {
      await browser?.close();
      await server?.close();
    });

    it('the page renders the operations of the OpenAPI document, with no CSP violation and no request to another origin', async () => {
      const page = await browser!.newPage();
      const problems: string[] = [];
      const elsewhere: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
      page.on('request', (request) => !request.url().startsWith(server.url) && !request.url().startsWith('data:') && elsewhere.push(request.url()));
      await page.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
      });
      const openapi = page.waitForResponse((res) => res.url() === `${server.url}/openapi.json`);
      await page.goto(`${server.url}/docs/`);
      expect((await openapi).status()).to.equal(200);
      await page.locator('.opblock').first().waitFor();
      expect(await page.locator('.opblock').count()).to.be.greaterThan(20);
      // Expand one operation: its rendering (markdown, schemas) must not need inline styles either.
      await page.locator('.opblock-summary').first().click();
      await page.locator('.opblock-body').first().waitFor();
      await page.waitForTimeout(300);
      expect(problems).to.deep.equal([]);
      expect(elsewhere).to.deep.equal([]);
      await page.close();
    });
  });
});
