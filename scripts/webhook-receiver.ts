/**
 * npm run receiver: a webhook receiver on this machine, for trying webhooks (the README's tour).
 * Listens on 127.0.0.1:9000 (RECEIVER_PORT), answers every POST 204 and prints one line per event:
 * its type, the alert's severity, agent and title. With WEBHOOK_SECRET (the `whsec_…` that adding
 * the endpoint answered) it checks each Standard Webhooks signature and says whether it holds.
 * A webhook to it needs a service started with WEBHOOK_ALLOW_HTTP=1 WEBHOOK_ALLOW_PRIVATE=1: by
 * default webhooks go only to public https addresses.
 */
import crypto from 'node:crypto';
import http from 'node:http';

const port = Number(process.env.RECEIVER_PORT ?? 9000);
const secret = process.env.WEBHOOK_SECRET;

/**
 * Standard Webhooks: v1 = base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the secret's bytes.
 * Written from the specification, as a receiver would, not with the service's own signer
 * (src/webhooks/sender.ts `signatures`): a mistake there must show here as a bad signature.
 */
function verified(headers: http.IncomingHttpHeaders, body: string): boolean {
  if (!secret) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = crypto.createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .some((s) => {
      const given = Buffer.from(s.replace(/^v1,/, ''), 'base64');
      return given.length === expected.length && crypto.timingSafeEqual(given, expected);
    });
}

const server = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (body += chunk));
  req.on('end', () => {
    res.writeHead(204).end();
    let event: { type?: string; data?: { severity?: string; agentId?: string | null; message?: string } };
    try {
      event = JSON.parse(body);
    } catch {
      console.log(`${req.method} ${req.url}: not JSON (${body.length} bytes)`);
      return;
    }
    const check = secret ? (verified(req.headers, body) ? ' [signature ok]' : ' [BAD SIGNATURE]') : '';
    const alert = event.data ?? {};
    const who = [alert.severity, alert.agentId].filter(Boolean).join(' ');
    console.log([`${event.type}${check}`, who, alert.message].filter(Boolean).join(': '));
  });
});
server.listen(port, '127.0.0.1', () => console.log(`receiving webhooks on http://127.0.0.1:${port}/`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
