/** Ids: prefixed, time first (tables keyed by them grow at one end), then 80 random bits. */
import { expect } from 'chai';
import { newId } from '../../src/domain/ids.js';

describe('ids', () => {
  it('sort as the times they were made at, in JS and in SQLite order (plain byte order)', () => {
    const times = [0, 1, 31, 32, 1_000, Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1) + 1, Date.UTC(2100, 0, 1), 2 ** 40 - 1];
    const ids = times.map((t) => newId('alr', t));
    for (const id of ids) expect(id).to.match(/^alr_[2-7a-z]{24}$/);
    const byBytes = [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(byBytes).to.deep.equal(ids);
    expect([...ids].reverse().sort()).to.deep.equal(ids);
  });

  it('made in the same millisecond are distinct, their random parts spread over the alphabet', () => {
    const now = Date.now();
    const ids = Array.from({ length: 10_000 }, () => newId('dlv', now));
    expect(new Set(ids).size).to.equal(ids.length);
    expect(new Set(ids.map((id) => id.slice(4, 12))).size).to.equal(1);
    const seen = new Set(ids.flatMap((id) => [...id.slice(12)]));
    expect(seen.size).to.equal(32);
  });
});
