import { expect } from 'chai';
import zlib from 'node:zlib';
import { api } from '../helpers/context.js';

/** The built page's script and stylesheet URLs. */
function assetUrls(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
}

describe('dashboard files', () => {
  it('the page is served at /, /dashboard/ and any page below it, with a strict content security policy and no key', async () => {
    for (const path of ['/', '/dashboard', '/dashboard/', '/dashboard/agents/some%20agent', '/dashboard/alerts?status=open']) {
      const res = await api().get(path).expect(200).expect('Content-Type', /text\/html/);
      expect(res.text, path).to.include('<div id="app">');
      expect(res.headers['cache-control'], path).to.equal('no-cache');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).to.include("script-src 'self'").and.include("connect-src 'self'").and.include("frame-ancestors 'none'");
      expect(res.headers['referrer-policy']).to.equal('no-referrer');
    }
  });

  it('assets come from this service (no CDN), gzipped when asked, cached for good, and revalidate by ETag', async () => {
    const html = (await api().get('/dashboard/').expect(200)).text;
    expect([...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((u) => /^(https?:)?\/\//.test(u))).to.deep.equal([]);
    const urls = assetUrls(html);
    expect(urls.some((u) => u.endsWith('.js'))).to.equal(true);
    expect(urls.some((u) => u.endsWith('.css'))).to.equal(true);
    for (const url of urls) {
      const plain = await api().get(url).set('Accept-Encoding', 'identity').expect(200);
      expect(plain.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      expect(plain.headers['content-encoding']).to.equal(undefined);
      const zipped = await api()
        .get(url)
        .set('Accept-Encoding', 'gzip')
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => done(null, Buffer.concat(chunks)));
        })
        .expect(200);
      expect(zipped.headers['content-encoding']).to.equal('gzip');
      // supertest inflates gzip itself: the body is the same file either way.
      expect((zipped.body as Buffer).toString()).to.equal(plain.text);
      await api().get(url).set('If-None-Match', String(plain.headers.etag)).expect(304);
    }
    await api().get('/dashboard/assets/nothing-here.js').expect(404);
  });

  it('the first page stays within its budget: at most 250 KB gzipped, everything it loads counted', async () => {
    const html = (await api().get('/dashboard/').expect(200)).text;
    let total = zlib.gzipSync(html).length;
    for (const url of assetUrls(html)) total += zlib.gzipSync((await api().get(url).expect(200)).text).length;
    expect(total).to.be.lessThan(250 * 1024);
  });
});
