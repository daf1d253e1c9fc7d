/**
 * A read waits for the loader only while records it counts are unloaded: records of other event
 * times, or of other teams, do not hold it up; a chunk of unknown times (read back after a restart)
 * counts for every read. Analytics say in Server-Timing when a read waited.
 */
import { expect } from 'chai';
import { Backpressure } from '../../src/domain/errors.js';
import { Freshness } from '../../src/ingest/freshness.js';
import type { LogChunk } from '../../src/ingest/log.js';
import type { TimeWindow } from '../../src/domain/windows.js';
import { api, appWith, newTeam, testEnv } from '../helpers/context.js';

const chunk = (teamId: string, firstPos: number, lastPos: number, eventTimes?: { first: number; last: number }): LogChunk => ({
  firstPos,
  lastPos,
  teamId,
  rows: lastPos - firstPos + 1,
  bytes: 100,
  committedAt: Date.now(),
  format: 'rowbinary2',
  ...(eventTimes ? { eventTimes } : {}),
});

describe('a read waits only for the records it counts', function () {
  this.timeout(60_000);

  it('does not wait for unloaded records of other times or other teams', async () => {
    const freshness = new Freshness(0, [chunk('a', 1, 10, { first: 1_000, last: 2_000 }), chunk('b', 11, 20, { first: 5_000, last: 5_000 })]);
    expect(await freshness.caughtUp('a', 50, { from: 2_001, to: 9_000 })).to.equal(0);
    expect(await freshness.caughtUp('a', 50, { from: 0, to: 1_000 })).to.equal(0, 'to is exclusive');
    expect(await freshness.caughtUp('c', 50, { from: 0, to: 9_000 })).to.equal(0);
  });

  it('waits for an unloaded record in its times, and no further than the last such chunk', async () => {
    const freshness = new Freshness(0, [chunk('a', 1, 10, { first: 1_000, last: 2_000 }), chunk('a', 11, 20, { first: 8_000, last: 9_000 })]);
    const waiting = freshness.caughtUp('a', 5_000, { from: 2_000, to: 3_000 });
    setTimeout(() => freshness.loaded(10), 30);
    const waited = await waiting;
    expect(waited).to.be.greaterThan(20);
    // The same read over both chunks waits for the second; nothing loads it in time: a 503.
    const refused = await freshness.caughtUp('a', 40, { from: 0, to: 10_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(Backpressure);
  });

  it('counts a chunk of unknown times for every read, and a read of no times for every chunk', async () => {
    const freshness = new Freshness(0, [chunk('a', 1, 10)]);
    const windowFar: TimeWindow = { from: 0, to: 1 };
    for (const times of [windowFar, undefined]) {
      const refused = await freshness.caughtUp('a', 30, times).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused, JSON.stringify(times)).to.be.instanceOf(Backpressure);
    }
  });

  it('a chunk this process commits knows its records\' event times', async () => {
    const team = await newTeam('fresh-times');
    const seen: LogChunk[] = [];
    const freshness = testEnv().deps.ingest.freshness;
    const committed = freshness.committed.bind(freshness);
    freshness.committed = (chunks) => {
      seen.push(...chunks.filter((c) => c.teamId === team.teamId));
      committed(chunks);
    };
    try {
      const events = [3, 1, 2].map((day) => ({
        id: `times-${day}`,
        agent_id: 'bot',
        endpoint: 'https://api.example.com/v1/x',
        method: 'GET',
        amount: '1',
        created_at: Date.UTC(2026, 0, day, 12),
      }));
      await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    } finally {
      freshness.committed = committed;
    }
    expect(seen.map((c) => c.eventTimes)).to.deep.equal([{ first: Date.UTC(2026, 0, 1, 12), last: Date.UTC(2026, 0, 3, 12) }]);
  });
});

describe('analytics say when a read waited for the loader', function () {
  this.timeout(60_000);

  it('in Server-Timing, for the times the answer counts (the summary\'s previous period too)', async () => {
    const team = await newTeam('fresh-header');
    const asked: TimeWindow[] = [];
    let waitedMs = 0;
    const app = appWith([], {
      readEventsIn: async (teamId: string, times: TimeWindow) => {
        asked.push(times);
        return { ...(await testEnv().deps.readEventsIn(teamId, times)), waitedMs };
      },
    });
    const from = Date.UTC(2026, 5, 10);
    const to = Date.UTC(2026, 5, 11);
    const quiet = await api(app).get('/api/v1/analytics/by-agent').query({ from, to }).set(...team.auth).expect(200);
    expect(quiet.headers['server-timing']).to.equal(undefined);
    waitedMs = 12.34;
    const waited = await api(app).get('/api/v1/analytics/summary').query({ from, to }).set(...team.auth).expect(200);
    expect(waited.headers['server-timing']).to.equal('loader;dur=12.3;desc="waited for acknowledged records to load"');
    expect(asked).to.deep.equal([
      { from, to },
      { from: from - (to - from), to },
    ]);
  });
});
