/**
 * The benchmarks' yardstick: a Node HTTP server that does what any JSON API must (read the body,
 * JSON.parse it, answer with JSON) and nothing else. bench:ingest and bench:authorize drive it with
 * the same load as the service; the ratio says how much of the machine's HTTP+JSON ceiling the
 * service reaches. With `--express`, the same answer from an express app with express.json (the
 * framework the service is built on): its ceiling, before any work of the service's own.
 * Prints `listening <port>` on stdout.
 */
import http from 'node:http';
import express from 'express';

/** What the service answers is about this big: an ingest result, or an authorization with its checks. */
function answerTo(body: { events?: unknown[] }): string {
  if (Array.isArray(body.events)) return JSON.stringify({ ingested: body.events.length, duplicates: 0, errors: [], alerts_created: 0 });
  const check = { policy_id: 'pol_oc5z2hitduo6lmewdoyy6csy', kind: 'daily', window: { start: new Date(0).toISOString(), end: new Date(0).toISOString() }, limit: '2000', spent: '0', held: '0', remaining: '2000', breaks: false };
  return JSON.stringify({ id: 'auth_oc62b4k2a7q3x9m5c1v8n6z0', decision: 'approved', ...body, checks: [check, check, check, check], reasons: [] });
}

let server: http.Server;
if (process.argv.includes('--express')) {
  const app = express();
  app.set('etag', false);
  app.post('/{*path}', express.json({ limit: '10mb' }), (req, res) => {
    res.type('application/json').send(answerTo(req.body as { events?: unknown[] }));
  });
  server = http.createServer(app);
} else {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = answerTo(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events?: unknown[] });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
}
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
