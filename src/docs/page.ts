import express, { type Router } from 'express';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PROJECT_ROOT } from '../paths.js';

/** The page (public/docs) and the viewer it loads, from the installed swagger-ui-dist package. */
const PAGE_DIR = path.join(PROJECT_ROOT, 'public/docs');
const VIEWER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * GET /docs: the API documentation, readable in a browser, from files this service serves itself
 * (the machine may be offline, and a CDN would see who reads the docs). No key: the document is
 * public, and the page sends a key only when someone uses "Try it out".
 */
export function docsPage(): Router {
  const router = express.Router();
  router.use('/docs/assets', express.static(VIEWER_DIR, { index: false, maxAge: '1h' }));
  router.use('/docs', express.static(PAGE_DIR, { index: 'index.html' }));
  return router;
}
