import { expect } from 'chai';
import { splitRange } from '../../src/analytics/queries.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('splitRange', () => {
  const t0 = Date.UTC(2026, 10, 1);

  it('reads whole days from the daily rollup, whole hours around them, raw ms at the ends', () => {
    const range = { from: t0 + 5 * HOUR + 123, to: t0 + 3 * DAY + 2 * HOUR + 7 };
    expect(splitRange(range, ['day', 'hour'])).to.deep.equal([
      { level: 'raw', from: range.from, to: t0 + 6 * HOUR },
      { level: 'hour', from: t0 + 6 * HOUR, to: t0 + DAY },
      { level: 'day', from: t0 + DAY, to: t0 + 3 * DAY },
      { level: 'hour', from: t0 + 3 * DAY, to: t0 + 3 * DAY + 2 * HOUR },
      { level: 'raw', from: t0 + 3 * DAY + 2 * HOUR, to: range.to },
    ]);
  });

  it('covers every range exactly once, whatever the levels', () => {
    const cases = [
      { from: t0, to: t0 + 10 * DAY },
      { from: t0 + 1, to: t0 + HOUR - 1 },
      { from: t0 + 59 * MINUTE, to: t0 + 61 * MINUTE },
      { from: t0 + 17 * HOUR + 30 * MINUTE, to: t0 + 2 * DAY + 30 * MINUTE },
    ];
    for (const range of cases) {
      for (const levels of [['day', 'hour', 'minute'], ['hour'], ['minute'], []] as const) {
        const segments = splitRange(range, levels);
        expect(segments[0]!.from).to.equal(range.from);
        expect(segments.at(-1)!.to).to.equal(range.to);
        segments.forEach((s, i) => {
          expect(s.from).to.be.lessThan(s.to);
          if (i > 0) expect(s.from).to.equal(segments[i - 1]!.to);
          if (s.level === 'day') expect([s.from % DAY, s.to % DAY]).to.deep.equal([0, 0]);
          if (s.level === 'hour') expect([s.from % HOUR, s.to % HOUR]).to.deep.equal([0, 0]);
          if (s.level === 'minute') expect([s.from % MINUTE, s.to % MINUTE]).to.deep.equal([0, 0]);
        });
      }
    }
  });

  it('is empty for an empty range', () => {
    expect(splitRange({ from: t0, to: t0 }, ['day', 'hour'])).to.deep.equal([]);
  });
});
