/** Money as units of 10^-18: parsing and formatting are exact inverses, at every magnitude and sign. */
import { expect } from 'chai';
import { formatUnits, toUnits } from '../../src/domain/money.js';

describe('money units', () => {
  it('formats units as the shortest exact decimal', () => {
    const cases: [bigint, string][] = [
      [0n, '0'],
      [1n, '0.000000000000000001'],
      [-1n, '-0.000000000000000001'],
      [10n ** 18n, '1'],
      [-(10n ** 18n), '-1'],
      [12_500_000_000_000_000_000n, '12.5'],
      [500_000_000_000_000_000n, '0.5'],
      [10n ** 38n - 1n, '99999999999999999999.999999999999999999'],
      [123_000_000_000_000_000_000_000n, '123000'],
    ];
    for (const [units, text] of cases) expect(formatUnits(units), String(units)).to.equal(text);
  });

  it('toUnits and formatUnits round-trip', () => {
    for (const text of ['0', '0.25', '41.5', '1000000', '0.000000000000000123', '-3.75', '20.000000000000000001']) {
      expect(formatUnits(toUnits(text))).to.equal(text);
    }
    // Trailing zeros are not kept: the value is.
    expect(formatUnits(toUnits('2.50'))).to.equal('2.5');
  });
});
