/**
 * The dashboard's build: `npm run build` (and so `npm start` and `npm test`) runs it after the
 * server's tsc. The service serves the output, dist/dashboard, at /dashboard/ (src/dashboard).
 * Everything the page loads is in that output: no CDN (the machine may be offline).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/dashboard/',
  // Preact's automatic JSX runtime, without a plugin (tsconfig.json says the same for the checker).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The service sends gzip-able assets; the size budget (250 KB gzipped) is checked by a test.
    reportCompressedSize: true,
    chunkSizeWarningLimit: 600,
  },
  // `npm run dashboard:dev`: the page with live reload, against a service running on :8080.
  server: { proxy: { '/api': process.env.SPENDSCOPE_URL ?? 'http://127.0.0.1:8080' } },
  logLevel: 'warn',
});
