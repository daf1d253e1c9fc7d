import { expect } from 'chai';
import { API_PREFIXES } from '../../src/http/routes.js';
import { api, newTeam, testEnv } from '../helpers/context.js';

interface RouterLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

/** What express really mounted, read from its router: independent of the route list. */
function mountedRoutes(): { method: string; path: string }[] {
  const router = (testEnv().app as unknown as { router: { stack: RouterLayer[] } }).router;
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
    components: { schemas: Record<string, unknown> };
  };

  before(async () => {
    const team = newTeam();
    const res = await api().get('/api/v1/openapi.json').set(...team.auth).expect(200);
    doc = res.body;
  });

  it('is OpenAPI 3.1 and served under /v1 as well', async () => {
    expect(doc.openapi).to.equal('3.1.0');
    const team = newTeam();
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
    expect(getTeam.responses).to.have.keys('200', '401');
    expect(getTeam.security).to.equal(undefined);
    const health = doc.paths['/healthz']!.get as { security: unknown[] };
    expect(health.security).to.deep.equal([]);
  });
});
