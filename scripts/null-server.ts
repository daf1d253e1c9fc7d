/**
 * The benchmark's yardstick: a Node HTTP server that does what any JSON API must (read the body,
 * JSON.parse it, answer with JSON) and nothing else. bench:ingest drives it with the same load as
 * the service; the ratio says how much of the machine's HTTP+JSON ceiling ingest reaches.
 * Prints `listening <port>` on stdout.
 */
import http from 'node:http';

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events?: unknown[] };
    const answer = JSON.stringify({ ingested: body.events?.length ?? 0, duplicates: 0, errors: [], alerts_created: 0 });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
