import { expect } from 'chai';
import { utcDay, zonedDay, zonedMonth, zonedWeek, type Window } from '../../src/domain/windows.js';

const at = (iso: string) => Date.parse(iso);
const shown = (w: Window) => ({ start: new Date(w.start).toISOString(), end: new Date(w.end).toISOString() });

describe('calendar windows in a time zone', () => {
  it('months of 28, 29, 30 and 31 days, in UTC: the last millisecond of a month and the first of the next', () => {
    const cases: [string, string, string][] = [
      ['2026-01-31T23:59:59.999Z', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
      ['2026-02-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
      ['2026-02-28T23:59:59.999Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
      ['2028-02-29T12:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
      ['2026-04-30T23:59:59.999Z', '2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z'],
      ['2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
      ['2027-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z'],
    ];
    for (const [t, start, end] of cases) expect(shown(zonedMonth(at(t), 'UTC')), t).to.deep.equal({ start, end });
  });

  it('ISO weeks from Monday 00:00, across a month and a year end', () => {
    // 2026-11-29 is a Sunday; 2026-11-30 a Monday. 2027-01-03 a Sunday.
    expect(shown(zonedWeek(at('2026-11-29T23:59:59.999Z'), 'UTC'))).to.deep.equal({ start: '2026-11-23T00:00:00.000Z', end: '2026-11-30T00:00:00.000Z' });
    expect(shown(zonedWeek(at('2026-11-30T00:00:00.000Z'), 'UTC'))).to.deep.equal({ start: '2026-11-30T00:00:00.000Z', end: '2026-12-07T00:00:00.000Z' });
    expect(shown(zonedWeek(at('2027-01-01T08:00:00.000Z'), 'UTC'))).to.deep.equal({ start: '2026-12-28T00:00:00.000Z', end: '2027-01-04T00:00:00.000Z' });
  });

  it('New York across both DST changes: days of 23 and 25 hours, the week and the month that hold them', () => {
    const zone = 'America/New_York';
    // Spring forward 2026-03-08 02:00 EST -> 03:00 EDT; fall back 2026-11-01 02:00 EDT -> 01:00 EST.
    expect(shown(zonedDay(at('2026-03-08T12:00:00Z'), zone))).to.deep.equal({ start: '2026-03-08T05:00:00.000Z', end: '2026-03-09T04:00:00.000Z' });
    expect(shown(zonedDay(at('2026-11-01T12:00:00Z'), zone))).to.deep.equal({ start: '2026-11-01T04:00:00.000Z', end: '2026-11-02T05:00:00.000Z' });
    // The week of 2026-03-02 (Monday) to 03-09 holds the spring change: 7 days less an hour.
    const spring = zonedWeek(at('2026-03-08T12:00:00Z'), zone);
    expect(shown(spring)).to.deep.equal({ start: '2026-03-02T05:00:00.000Z', end: '2026-03-09T04:00:00.000Z' });
    expect(spring.end - spring.start).to.equal(7 * 86_400_000 - 3_600_000);
    // Sunday 23:30 local before the fall change is still the week that began 2026-10-26 (EDT).
    expect(shown(zonedWeek(at('2026-11-02T04:30:00Z'), zone))).to.deep.equal({ start: '2026-10-26T04:00:00.000Z', end: '2026-11-02T05:00:00.000Z' });
    // Months: March starts in EST and ends in EDT; November the other way.
    expect(shown(zonedMonth(at('2026-03-31T12:00:00Z'), zone))).to.deep.equal({ start: '2026-03-01T05:00:00.000Z', end: '2026-04-01T04:00:00.000Z' });
    expect(shown(zonedMonth(at('2026-11-01T03:59:59.999Z'), zone))).to.deep.equal({ start: '2026-10-01T04:00:00.000Z', end: '2026-11-01T04:00:00.000Z' });
    expect(shown(zonedMonth(at('2026-11-01T04:00:00.000Z'), zone))).to.deep.equal({ start: '2026-11-01T04:00:00.000Z', end: '2026-12-01T05:00:00.000Z' });
  });

  it('Berlin across both DST changes, and a zone east of UTC whose local month starts the UTC day before', () => {
    const zone = 'Europe/Berlin';
    // 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
    expect(shown(zonedDay(at('2026-03-29T10:00:00Z'), zone))).to.deep.equal({ start: '2026-03-28T23:00:00.000Z', end: '2026-03-29T22:00:00.000Z' });
    expect(shown(zonedWeek(at('2026-10-25T10:00:00Z'), zone))).to.deep.equal({ start: '2026-10-18T22:00:00.000Z', end: '2026-10-25T23:00:00.000Z' });
    expect(shown(zonedMonth(at('2026-03-01T00:00:00Z'), zone))).to.deep.equal({ start: '2026-02-28T23:00:00.000Z', end: '2026-03-31T22:00:00.000Z' });
    // 23:30 UTC on the last day of February is already March 1st in Berlin.
    expect(zonedMonth(at('2026-02-28T23:30:00Z'), zone).start).to.equal(at('2026-02-28T23:00:00Z'));
    expect(zonedMonth(at('2026-02-28T22:59:59.999Z'), zone).start).to.equal(at('2026-01-31T23:00:00Z'));
  });

  it('every instant of a year falls in exactly one window of each kind, windows tiling without gaps (two zones, hourly steps)', () => {
    for (const zone of ['America/New_York', 'Australia/Lord_Howe', 'UTC']) {
      for (const of of [zonedDay, zonedWeek, zonedMonth]) {
        let previous: Window | undefined;
        for (let t = at('2026-01-01T00:00:00Z'); t < at('2027-01-01T00:00:00Z'); t += 1_800_000) {
          const w = of(t, zone);
          expect(t >= w.start && t < w.end, `${zone} ${of.name} ${new Date(t).toISOString()}`).to.equal(true);
          if (previous && w.start !== previous.start) expect(w.start, `${zone} ${of.name} gap at ${new Date(t).toISOString()}`).to.equal(previous.end);
          previous = w;
        }
      }
    }
    expect(zonedDay(at('2026-06-01T10:00:00Z'), 'UTC')).to.deep.equal(utcDay(at('2026-06-01T10:00:00Z')));
  });
});
