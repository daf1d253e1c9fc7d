/** The log's two forms: JSON for collectors, readable lines for a person at a terminal. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { jsonLogDestination, logDestination, prettyLine } from '../../src/http/log-format.js';
import { sleep } from '../helpers/common.js';

/** A stand-in for stdout: what was written, and whether it says it is a terminal. */
function terminal(isTTY: boolean) {
  const written: string[] = [];
  return { written, stream: { isTTY, write: (s: string) => (written.push(s), true) } as unknown as NodeJS.WriteStream };
}

describe('log format', () => {
  it('auto: readable lines on a terminal, JSON (pino to stdout) when piped; pretty and json force either', () => {
    expect(logDestination('auto', terminal(false).stream)).to.equal(undefined);
    expect(logDestination('json', terminal(true).stream)).to.equal(undefined);
    const piped = terminal(false);
    const forced = logDestination('pretty', piped.stream)!;
    pino({ level: 'info' }, forced).warn({ teamId: 'team_1', rows: 3 }, 'ingest: records rejected');
    // Not a terminal: no colour codes.
    expect(piped.written[0]).to.match(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}ingest: records rejected {2}teamId=team_1 rows=3\n$/);
    const tty = terminal(true);
    pino({ level: 'info' }, logDestination('auto', tty.stream)!).info('hello');
    expect(tty.written[0]).to.include('\x1b[').and.include('hello');
  });

  it('JSON lines are written in chunks: a lone line not at once but by the timer; a burst whole and in order at the end', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-log-')), 'out.log');
    const destination = jsonLogDestination(fs.openSync(file, 'w')) as ReturnType<typeof pino.destination>;
    // Writes what is buffered, closes the file and stops the timer (what pino does at exit).
    const closed = new Promise((resolve) => destination.once('close', resolve));
    let ended = false;
    try {
      const logger = pino({ level: 'info' }, destination);
      logger.info({ n: 0 }, 'alone');
      // Held for a moment (no write per line), then written by the periodic flush.
      expect(fs.readFileSync(file, 'utf8')).to.equal('');
      // The timer's write goes through libuv's pool, which a busy test run may keep waiting.
      for (let waited = 0; waited < 2000 && fs.readFileSync(file, 'utf8') === ''; waited += 50) await sleep(50);
      expect(JSON.parse(fs.readFileSync(file, 'utf8')).msg).to.equal('alone');
      for (let n = 1; n <= 200; n++) logger.info({ n }, 'burst');
      ended = true;
      destination.end();
      await closed;
      const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { n: number });
      expect(lines.map((l) => l.n)).to.deep.equal(Array.from({ length: 201 }, (_, n) => n));
    } finally {
      if (!ended) destination.end();
      await closed;
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  });

  it('a request reads as method, path, status and time; an error shows its stack; a line that is not JSON passes through', () => {
    const request = JSON.stringify({ level: 30, time: 0, msg: 'request completed', req: { id: 'r-1', method: 'POST', path: '/api/v1/events' }, res: { statusCode: 503 }, responseTime: 12, teamId: 't' });
    expect(prettyLine(request, false)).to.match(/ INFO {2}POST \/api\/v1\/events 503 12ms {2}requestId=r-1 teamId=t\n$/);
    const failure = JSON.stringify({ level: 50, time: 0, msg: 'ingest log write failed', err: { type: 'Error', message: 'disk full', stack: 'Error: disk full\n    at write' }, rows: 5 });
    const line = prettyLine(failure, false);
    expect(line).to.include('ERROR ingest log write failed').and.include('\n    Error: disk full\n        at write').and.include('rows=5');
    expect(prettyLine('not json', false)).to.equal('not json\n');
  });
});
