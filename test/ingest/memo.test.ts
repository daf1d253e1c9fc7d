/** The ingest path's remembered functions: the same answers as computing them, within a bound. */
import { expect } from 'chai';
import { memoized } from '../../src/domain/memo.js';

describe('memoized', () => {
  it('computes a key once, undefined answers included; long keys every time; past the bound it starts again', () => {
    const calls: string[] = [];
    const lengthOrNothing = memoized((key: string) => {
      calls.push(key);
      return key.startsWith('x') ? undefined : key.length;
    }, 3, 5);
    expect([lengthOrNothing('ab'), lengthOrNothing('ab'), lengthOrNothing('xy'), lengthOrNothing('xy')]).to.deep.equal([2, 2, undefined, undefined]);
    expect(calls).to.deep.equal(['ab', 'xy']);
    expect([lengthOrNothing('abcdef'), lengthOrNothing('abcdef')]).to.deep.equal([6, 6]);
    expect(calls).to.deep.equal(['ab', 'xy', 'abcdef', 'abcdef']);
    lengthOrNothing('c'); // the third key kept: the bound is reached
    lengthOrNothing('d'); // starts again, keeping only this one
    lengthOrNothing('ab');
    expect(calls.slice(4)).to.deep.equal(['c', 'd', 'ab']);
    lengthOrNothing('d');
    expect(calls).to.have.length(7);
  });
});
