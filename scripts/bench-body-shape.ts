/**
 * npm run bench:body-shape -- [--rounds 5]
 *
 * What a body nested too deep costs the service to refuse. Each body (8 MB of brackets, a UTF-16
 * one of 4 MB of text) is sent `rounds` times to a service on a temporary data directory; the
 * service's CPU per refusal (from /proc) is printed beside the yardstick, JSON.parse of the same
 * text in this process, and their ratio (medians). The raw scan before JSON.parse is why the
 * ratio stays well under 1: a refusal costs reading the bytes, not parsing them.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startChildService } from './service.js';
import { cpuSeconds, median } from './stats.js';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(args.rounds);
const KEY = 'bench-body-shape-key-0123456789abcdef';
const EIGHT_MB = 8_000_000;

const bodies: { label: string; text: string; encoding: 'utf8' | 'utf16le' }[] = [
  { label: '8 MB of "[" never closed', text: `{"q":${'['.repeat(EIGHT_MB)}`, encoding: 'utf8' },
  { label: '8 MB of "[" then "]"', text: '['.repeat(EIGHT_MB / 2) + ']'.repeat(EIGHT_MB / 2), encoding: 'utf8' },
  { label: '8 MB of {"a":', text: '{"a":'.repeat(EIGHT_MB / 5), encoding: 'utf8' },
  { label: 'UTF-16, 2 M "["', text: `{"q":${'['.repeat(EIGHT_MB / 4)}`, encoding: 'utf16le' },
];

function post(port: number, body: Buffer, charset: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/audit/query',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': `application/json; charset=${charset}`, 'Content-Length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function parseMs(text: string): number {
  const before = process.cpuUsage();
  try {
    JSON.parse(text);
  } catch {
    // Unclosed bodies fail at their end, after the work.
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-body-shape-'));
  const service = await startChildService({ dataDir, env: { BOOTSTRAP_API_KEY: KEY, RATE_LIMIT_REQUESTS_PER_SECOND: '1000000' } });
  try {
    console.log('| body | service CPU per refusal (ms) | JSON.parse (ms) | ratio |');
    console.log('|---|---|---|---|');
    for (const { label, text, encoding } of bodies) {
      const raw = encoding === 'utf8' ? Buffer.from(text) : Buffer.from(`\ufeff${text}`, 'utf16le');
      const serviceMs: number[] = [];
      const parse: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const cpu0 = cpuSeconds(service.pid);
        const status = await post(service.port, raw, encoding === 'utf8' ? 'utf-8' : 'utf-16');
        if (status !== 400) throw new Error(`${label}: expected 400, got ${status}`);
        serviceMs.push((cpuSeconds(service.pid) - cpu0) * 1000);
        parse.push(parseMs(text));
      }
      const [s, p] = [median(serviceMs), median(parse)];
      console.log(`| ${label} | ${s.toFixed(0)} | ${p.toFixed(0)} | ${(s / p).toFixed(2)} |`);
    }
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
