/**
 * Serves the dashboard (built from dashboard/ into dist/dashboard by `npm run build`): the page at
 * / and at every /dashboard/… path (the page routes in the browser), and its hashed assets.
 * Assets are read and gzipped once per process and kept in memory: a few files, under 100 KB.
 * No key is needed for these files; the page asks for one and sends it only to the API.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import express, { type Request, type Response, type Router } from 'express';
import { PROJECT_ROOT } from '../paths.js';

export const DASHBOARD_DIR = path.join(PROJECT_ROOT, 'dist/dashboard');

interface Asset {
  body: Buffer;
  gzipped: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * The page may run its own scripts and styles and talk to this origin only: a key pasted into it
 * cannot be sent elsewhere by injected markup, and no other site can frame it.
 */
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

let cache: Map<string, Asset> | undefined;

/** The built files by URL path below /dashboard/ ('index.html', 'assets/index-….js'). */
function assets(): Map<string, Asset> {
  if (cache) return cache;
  const found = new Map<string, Asset>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const body = fs.readFileSync(full);
        found.set(path.relative(DASHBOARD_DIR, full).split(path.sep).join('/'), {
          body,
          gzipped: zlib.gzipSync(body, { level: 9 }),
          type: TYPES[path.extname(entry.name)] ?? 'application/octet-stream',
          etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        });
      }
    }
  };
  if (fs.existsSync(path.join(DASHBOARD_DIR, 'index.html'))) walk(DASHBOARD_DIR);
  cache = found;
  return found;
}

function send(req: Request, res: Response, asset: Asset, cacheControl: string): void {
  res.setHeader('Content-Type', asset.type);
  res.setHeader('Cache-Control', cacheControl);
  res.setHeader('ETag', asset.etag);
  res.setHeader('Vary', 'Accept-Encoding');
  if (req.headers['if-none-match'] === asset.etag) {
    res.status(304).end();
    return;
  }
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  const body = gzip ? asset.gzipped : asset.body;
  res.setHeader('Content-Length', body.length);
  res.status(200).end(req.method === 'HEAD' ? undefined : body);
}

export function dashboardPage(): Router {
  const router = express.Router();
  const page = (req: Request, res: Response) => {
    const index = assets().get('index.html');
    res.set(PAGE_HEADERS);
    if (!index) {
      res.status(503).type('text/plain').send('The dashboard is not built: run `npm run build` (npm start does it).\n');
      return;
    }
    // Always revalidated: a new build changes the asset names it points to.
    send(req, res, index, 'no-cache');
  };
  router.get('/dashboard/assets/*file', (req, res, next) => {
    const asset = assets().get(`assets/${(req.params as { file: string[] }).file.join('/')}`);
    if (!asset) return next();
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Names carry a hash of their content: cache for good.
    send(req, res, asset, 'public, max-age=31536000, immutable');
  });
  router.get('/', page);
  router.get('/dashboard', page);
  router.get(/^\/dashboard\/(?!assets\/).*/, page);
  return router;
}
