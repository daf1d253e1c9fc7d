/**
 * Week and month buckets start at the requested zone's midnight (Monday, the 1st), on both sides
 * of its daylight-saving changes, and each record falls in the bucket of its local date.
 */
import { expect } from 'chai';
import type { Team } from '../helpers/common.js';
import { api, newTeam, describeOnEachRegistry } from '../helpers/context.js';

describeOnEachRegistry('timeseries weeks and months in a time zone, across DST changes', function () {
  this.timeout(60_000);
  let team: Team;
  const at = (iso: string) => Date.parse(iso);

  // America/New_York: EST (-05:00) until 2026-03-08, EDT (-04:00) until 2026-11-01, then EST.
  // Europe/Berlin: CET (+01:00) until 2026-03-29, CEST (+02:00) until 2026-10-25.
  const records: [string, string][] = [
    ['feb-end-ny', '2026-03-01T04:30:00Z'], // 23:30 on Feb 28 in New York: February
    ['mar-start-ny', '2026-03-01T05:30:00Z'], // 00:30 on Mar 1 in New York: March
    ['mar-end-ny', '2026-04-01T03:59:00Z'], // 23:59 on Mar 31 (EDT): March
    ['apr-start-ny', '2026-04-01T04:01:00Z'], // 00:01 on Apr 1 (EDT): April
    ['week-sun', '2026-03-09T03:30:00Z'], // 23:30 on Sunday Mar 8 (EDT): week of Mar 2
    ['week-mon', '2026-03-09T04:30:00Z'], // 00:30 on Monday Mar 9 (EDT): week of Mar 9
    ['lord-howe', '2026-06-15T13:45:00Z'], // 00:15 on Jun 16 at Lord Howe (+10:30 in winter): Jun 16
  ];

  before(async () => {
    team = await newTeam();
    const events = records.map(([id, iso]) => ({
      id,
      agent_id: 'tz-agent',
      endpoint: 'https://api.example.com/v1/x',
      method: 'GET',
      amount: '1',
      created_at: at(iso),
    }));
    const res = await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    expect(res.body.ingested).to.equal(records.length);
  });

  const series = async (query: Record<string, string | number>) =>
    (await api().get('/api/v1/analytics/timeseries').query(query).set(...team.auth).expect(200)).body as { t: string; spend: string; count: number }[];

  it('months start at local midnight on the 1st, in winter and summer time', async () => {
    const buckets = await series({ from: at('2026-02-01T05:00:00Z'), to: at('2026-12-01T05:00:00Z'), granularity: 'month', tz: 'America/New_York' });
    expect(buckets.map((b) => b.t)).to.deep.equal([
      '2026-02-01T05:00:00.000Z',
      '2026-03-01T05:00:00.000Z',
      '2026-04-01T04:00:00.000Z',
      '2026-05-01T04:00:00.000Z',
      '2026-06-01T04:00:00.000Z',
      '2026-07-01T04:00:00.000Z',
      '2026-08-01T04:00:00.000Z',
      '2026-09-01T04:00:00.000Z',
      '2026-10-01T04:00:00.000Z',
      '2026-11-01T04:00:00.000Z',
    ]);
    expect(buckets.slice(0, 3).map((b) => b.count)).to.deep.equal([1, 4, 1]);
  });

  it('weeks start at local midnight on Monday, before and after the change', async () => {
    const buckets = await series({ from: at('2026-03-02T05:00:00Z'), to: at('2026-03-23T04:00:00Z'), granularity: 'week', tz: 'America/New_York' });
    expect(buckets.map((b) => b.t)).to.deep.equal(['2026-03-02T05:00:00.000Z', '2026-03-09T04:00:00.000Z', '2026-03-16T04:00:00.000Z']);
    // Sunday 23:30 on Mar 8 is the week of Mar 2; 00:30 on Monday Mar 9 the next.
    expect(buckets.map((b) => b.count)).to.deep.equal([1, 1, 0]);
  });

  it('east of Greenwich too: Berlin months and weeks across its spring change', async () => {
    const months = await series({ from: at('2026-02-28T23:00:00Z'), to: at('2026-04-30T22:00:00Z'), granularity: 'month', tz: 'Europe/Berlin' });
    expect(months.map((b) => b.t)).to.deep.equal(['2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z']);
    const weeks = await series({ from: at('2026-03-22T23:00:00Z'), to: at('2026-04-05T22:00:00Z'), granularity: 'week', tz: 'Europe/Berlin' });
    expect(weeks.map((b) => b.t)).to.deep.equal(['2026-03-22T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
  });

  it('a zone whose offset turns to half hours inside the range: days summed from minutes, not hours', async () => {
    // Lord Howe Island: +11:00 in summer (both ends of the range), +10:30 in winter (between them):
    // an hour rollup would put 13:45Z, 15 minutes into Jun 16, in the day before.
    const buckets = await series({ from: at('2026-03-01T13:00:00Z'), to: at('2026-11-01T13:00:00Z'), granularity: 'day', tz: 'Australia/Lord_Howe' });
    const june = buckets.filter((b) => b.t.startsWith('2026-06-1'));
    expect(june.map((b) => [b.t, b.count])).to.deep.include.members([
      ['2026-06-14T13:30:00.000Z', 0],
      ['2026-06-15T13:30:00.000Z', 1],
    ]);
  });
});
