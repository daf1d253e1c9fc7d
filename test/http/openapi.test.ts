import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { API_PREFIXES } from '../../src/http/routes.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { api, newTeam, testEnv } from '../helpers/context.js';
import { run, tempDir } from '../helpers/processes.js';

interface RouterLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

/** What express really mounted, read from its router: independent of the route list. */
function mountedRoutes(): { method: string; path: string }[] {
  const router = (testEnv().app.express as unknown as { router: { stack: RouterLayer[] } }).router;
  const mounted: { method: string; path: string }[] = [];
  for (const layer of router.stack) {
    if (!layer.route) continue;
    for (const method of Object.keys(layer.route.methods)) {
      // OPTIONS is every path's own (204 with Allow, the CORS preflight): not an operation of the document.
      if (method !== '_all' && method !== 'options') mounted.push({ method, path: layer.route.path });
    }
  }
  return mounted;
}

describe('OpenAPI document', () => {
  let doc: {
    openapi: string;
    servers: { url: string }[];
    paths: Record<string, Record<string, unknown> & { servers?: { url: string }[] }>;
    webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>;
    components: { schemas: Record<string, unknown> };
  };

  before(async () => {
    const team = await newTeam();
    const res = await api().get('/api/v1/openapi.json').set(...team.auth).expect(200);
    doc = res.body;
  });

  it('is OpenAPI 3.1 and served under /v1 as well', async () => {
    expect(doc.openapi).to.equal('3.1.0');
    const team = await newTeam();
    const res = await api().get('/v1/openapi.json').set(...team.auth).expect(200);
    expect(res.body).to.deep.equal(doc);
  });

  it('lists every route express has mounted, under the prefix it is served at', () => {
    const mounted = mountedRoutes();
    expect(mounted.length).to.be.greaterThan(4);
    for (const { method, path } of mounted) {
      const prefix = [...API_PREFIXES, ''].find((p) => {
        const rest = path.slice(p.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
        const item = doc.paths[rest];
        if (!path.startsWith(p) || !item || !item[method]) return false;
        const servers = (item.servers ?? doc.servers).map((s) => (s.url === '/' ? '' : s.url));
        return servers.includes(p);
      });
      expect(prefix, `${method.toUpperCase()} ${path} is missing from openapi.json`).to.not.equal(undefined);
    }
  });

  it('every $ref resolves to a component schema', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).to.be.greaterThan(0);
    for (const ref of refs) {
      const target = /#\/components\/schemas\/([^"/]+)/.exec(ref);
      expect(target, ref).to.not.equal(null);
      expect(doc.components.schemas, ref).to.have.property(target![1]!);
    }
  });

  it('documents auth and the error shape on authenticated routes', () => {
    const getTeam = doc.paths['/team']!.get as { responses: Record<string, unknown>; security?: unknown };
    expect(getTeam.responses).to.have.keys('200', '401', '403', '429');
    expect(getTeam.security).to.deep.equal([{ bearerAuth: ['read'] }]);
    // Each operation names the scope its key needs (OpenAPI 3.1 lets a bearer requirement list roles).
    const security = (path: string, method: string) => (doc.paths[path]![method] as { security: unknown }).security;
    expect(security('/events', 'post')).to.deep.equal([{ bearerAuth: ['ingest'] }]);
    expect(security('/policies', 'post')).to.deep.equal([{ bearerAuth: ['admin'] }]);
    expect(security('/keys', 'post')).to.deep.equal([{ bearerAuth: ['admin'] }]);
    expect(security('/team/rotate-key', 'post')).to.deep.equal([{ bearerAuth: [] }]);
    expect(doc.paths['/keys/{id}']!.delete).to.have.nested.property('responses.409');
    const health = doc.paths['/healthz']!.get as { security: unknown[] };
    expect(health.security).to.deep.equal([]);
  });

  it('is served without a key at /openapi.json, /api/v1/openapi.json and /v1/openapi.json', async () => {
    for (const at of ['/openapi.json', '/api/v1/openapi.json', '/v1/openapi.json']) {
      expect((await api().get(at).expect(200)).body, at).to.deep.equal(doc);
    }
  });

  it('/audit/{id} answers 200 with the record or null, and never 404 (a 404 would switch the SDK to local storage)', () => {
    const get = doc.paths['/audit/{id}']!.get as { responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> };
    expect(get.responses).to.not.have.property('404');
    const schema = doc.components.schemas[get.responses['200']!.content!['application/json']!.schema.$ref.split('/').pop()!] as { oneOf?: unknown; type?: unknown; anyOf?: unknown };
    expect(JSON.stringify(schema)).to.include('null');
  });

  it('describes every webhook event a receiver may get (OpenAPI 3.1 webhooks), with the event payload', () => {
    expect(Object.keys(doc.webhooks)).to.have.members(['alert.opened', 'alert.escalated', 'alert.resolved', 'alert.reopened', 'authorization.pending', 'authorization.decided', 'test']);
    const schema = doc.webhooks['alert.opened']!.post.requestBody.content['application/json']!.schema.$ref.split('/').pop()!;
    expect(doc.components.schemas[schema]).to.have.nested.property('properties.data');
    expect(JSON.stringify(doc.components.schemas[schema])).to.include('#/components/schemas/alert');
  });

  it('has no unused components: every schema is reached from an operation', () => {
    const reached = new Set<string>();
    const visit = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(visit);
      if (!value || typeof value !== 'object') return;
      for (const [key, inner] of Object.entries(value)) {
        if (key === '$ref' && typeof inner === 'string') {
          const name = inner.split('/')[3]!;
          if (!reached.has(name)) {
            reached.add(name);
            visit(doc.components.schemas[name]);
          }
        } else visit(inner);
      }
    };
    visit(doc.paths);
    visit(doc.webhooks);
    expect(Object.keys(doc.components.schemas).sort()).to.deep.equal([...reached].sort());
  });

  it('passes `redocly lint` (recommended rules, redocly.yaml) without errors or warnings', async function () {
    this.timeout(120_000);
    const dir = tempDir('openapi');
    try {
      const file = path.join(dir, 'openapi.json');
      fs.writeFileSync(file, JSON.stringify(doc, null, 2));
      const cli = path.join(PROJECT_ROOT, 'node_modules/@redocly/cli/bin/cli.js');
      const result = await run(process.execPath, [cli, 'lint', file, '--format=json', `--config=${path.join(PROJECT_ROOT, 'redocly.yaml')}`]);
      const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
      expect(report.totals).to.include({ errors: 0, warnings: 0 });
      expect(result.code).to.equal(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('/docs is a readable page whose viewer and assets are all served here (no CDN), without a key', async () => {
    const redirect = await api().get('/docs').expect(301);
    expect(redirect.headers.location).to.equal('/docs/');
    const page = await api().get('/docs/').expect(200).expect('Content-Type', /html/);
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources).to.include.members(['assets/swagger-ui.css', 'assets/swagger-ui-bundle.js', 'init.js']);
    for (const source of sources) {
      expect(source, 'a relative URL, served here').to.not.match(/^(https?:)?\/\//);
      const res = await api().get(`/docs/${source}`).expect(200);
      // The favicons are images (no text); the script and style sheets are whole files.
      if (!source.endsWith('.png')) expect(res.text.length, source).to.be.greaterThan(source === 'init.js' ? 50 : 10_000);
    }
    const init = (await api().get('/docs/init.js').expect(200)).text;
    expect(init).to.include("'../openapi.json'");
  });
});
