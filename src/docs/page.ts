import express, { type Router } from 'express';
import { createRequire } from 'node:module';
import path from 'node:path';
import { notFound } from '../http/errors.js';
import { PROJECT_ROOT } from '../paths.js';

/** The page (public/docs) and the viewer it loads, from the installed swagger-ui-dist package. */
const PAGE_DIR = path.join(PROJECT_ROOT, 'public/docs');
const VIEWER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The files of swagger-ui-dist the page loads, and no others: the package also ships a demo page
 * (index.html, swagger-initializer.js) that points browsers at petstore.swagger.io, an OAuth
 * redirect page, and source maps.
 */
export const VIEWER_FILES = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-16x16.png', 'favicon-32x32.png']);

/**
 * Scripts and styles from files of this origin only (no inline code, so injected markup cannot
 * run), requests to this origin only (a key typed into "Authorize" cannot be sent elsewhere), and
 * no framing, base URL or form targets. Swagger UI's icons are data: images.
 */
export const DOCS_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * GET /docs: the API documentation, readable in a browser, from files this service serves itself
 * (the machine may be offline, and a CDN would see who reads the docs). No key: the document is
 * public, and the page sends a key only when someone uses "Try it out".
 */
export function docsPage(): Router {
  const router = express.Router();
  router.use('/docs', (_req, res, next) => {
    res.set(DOCS_HEADERS);
    next();
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const file = req.params.file;
    if (!VIEWER_FILES.has(file)) return next();
    res.sendFile(file, { root: VIEWER_DIR, maxAge: '1h', dotfiles: 'deny' }, (err) => err && next(err));
  });
  router.use('/docs/assets', notFound);
  router.use('/docs', express.static(PAGE_DIR, { index: 'index.html' }));
  return router;
}
