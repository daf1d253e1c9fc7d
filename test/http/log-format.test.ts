/** The log's two forms: JSON for collectors, readable lines for a person at a terminal. */
import { expect } from 'chai';
import { pino } from 'pino';
import { logDestination, prettyLine } from '../../src/http/log-format.js';

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

  it('a request reads as method, path, status and time; an error shows its stack; a line that is not JSON passes through', () => {
    const request = JSON.stringify({ level: 30, time: 0, msg: 'request completed', req: { id: 'r-1', method: 'POST', path: '/api/v1/events' }, res: { statusCode: 503 }, responseTime: 12, teamId: 't' });
    expect(prettyLine(request, false)).to.match(/ INFO {2}POST \/api\/v1\/events 503 12ms {2}requestId=r-1 teamId=t\n$/);
    const failure = JSON.stringify({ level: 50, time: 0, msg: 'ingest log write failed', err: { type: 'Error', message: 'disk full', stack: 'Error: disk full\n    at write' }, rows: 5 });
    const line = prettyLine(failure, false);
    expect(line).to.include('ERROR ingest log write failed').and.include('\n    Error: disk full\n        at write').and.include('rows=5');
    expect(prettyLine('not json', false)).to.equal('not json\n');
  });
});
