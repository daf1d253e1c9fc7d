/** A real local HTTP receiver for webhook tests: records what arrives, answers as told. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from '../helpers/common.js';

export interface Received {
  /** The request's path and query, as sent. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export class Receiver {
  readonly received: Received[] = [];
  /** Status codes to answer with, in order; once used up, 200. */
  answers: number[] = [];
  /** The body of an answer with this status (by default a short text). */
  bodyOf: (status: number) => string = (status) => (status === 200 ? 'ok' : `failing on purpose with ${status}`);
  /** Headers of every answer. */
  headers: Record<string, string> = {};
  private server: http.Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        const status = this.answers.shift() ?? 200;
        res.writeHead(status, { 'Content-Type': 'text/plain', ...this.headers }).end(this.bodyOf(status));
      });
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Events received so far, parsed. */
  events<T = { type: string; id: string; timestamp: string; data: Record<string, unknown> }>(): T[] {
    return this.received.map((r) => JSON.parse(r.body) as T);
  }

  /** Resolves once `n` requests have arrived (or rejects after `timeoutMs`). */
  async waitFor(n: number, timeoutMs = 10_000): Promise<Received[]> {
    const until = Date.now() + timeoutMs;
    while (this.received.length < n) {
      if (Date.now() > until) throw new Error(`expected ${n} webhook requests, got ${this.received.length}`);
      await sleep(20);
    }
    return this.received;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
