/** Valuation from rates: the asset's rate, at most one conversion, half-even to 18 places. */
import { expect } from 'chai';
import { productUnits, toUnits, formatUnits } from '../../src/domain/money.js';
import { assetKey, rateAt, revalued, valuationText, valueAt, type Rate, type RateHistory } from '../../src/domain/rates.js';

const team = (asset: string, value: string | null, currency: string | null, validFrom: number, decimals: number | null = null): Rate => ({
  asset, value, currency, validFrom, decimals, source: 'team',
});

describe('valuation from rates', () => {
  it('rounds a product half-even to 18 places', () => {
    const times = (a: string, b: string) => formatUnits(productUnits([toUnits(a), toUnits(b)]));
    expect(times('1.5', '2')).to.equal('3');
    expect(times('0.000000000000000001', '0.5')).to.equal('0'); // a half, to the even 0
    expect(times('0.000000000000000003', '0.5')).to.equal('0.000000000000000002'); // 1.5, to the even 2
    expect(times('0.000000000000000005', '0.5')).to.equal('0.000000000000000002'); // 2.5, to the even 2
    expect(times('0.000000000000000007', '0.5')).to.equal('0.000000000000000004'); // 3.5, to the even 4
    expect(times('0.000000000000000001', '0.6')).to.equal('0.000000000000000001');
    expect(times('123456789012345678.123456789012345678', '1.08')).to.equal('133333332133333332.373333332133333332');
  });

  it('keys assets as records name them: symbols in upper case, EVM addresses in lower case, mints as written', () => {
    expect(assetKey('usdc')).to.equal('USDC');
    expect(assetKey('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')).to.equal('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
    expect(assetKey('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')).to.equal('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
  });

  it("takes the team's latest version from before the time, its end, or the built-in peg", () => {
    const usdc: RateHistory = [team('USDC', null, null, 300), team('USDC', '0.98', 'USD', 200)];
    expect(rateAt(usdc, 'USDC', 100)).to.include({ value: '1', source: 'built-in' });
    expect(rateAt(usdc, 'USDC', 200)).to.include({ value: '0.98', source: 'team' });
    expect(rateAt(usdc, 'USDC', 299)).to.include({ value: '0.98', source: 'team' });
    expect(rateAt(usdc, 'USDC', 300)).to.include({ value: '1', source: 'built-in' });
    expect(rateAt([team('ETH', null, null, 300), team('ETH', '3000', 'USD', 200)], 'ETH', 300)).to.equal(undefined);
  });

  it('values through the rate of the rate\'s currency, one step at most', () => {
    const rates = new Map<string, RateHistory>([
      ['EUR', [team('EUR', '1.08', 'USD', 0)]],
      ['ETH', [team('ETH', '3050.25', 'USD', 0)]],
      ['GBP', [team('GBP', '1.17', 'EUR', 0)]],
      ['TOK', [team('TOK', '2', 'GBP', 0)]],
    ]);
    const of = (asset: string) => rates.get(asset);
    expect((valueAt(of, 'USDC', '12.5', 1, 'USD') as { value: string }).value).to.equal('12.5');
    expect(valueAt(of, 'eurc', '10', 1, 'USD')).to.deep.include({ value: '10.8' });
    expect((valueAt(of, 'ETH', '0.5', 1, 'USD') as { value: string }).value).to.equal('1525.125');
    expect(valueAt(of, 'ETH', '0.5', 1, 'EUR')).to.equal('no-rate'); // no USD -> EUR rate
    expect(valueAt(of, 'TOK', '1', 1, 'USD')).to.equal('no-rate'); // GBP -> EUR -> USD: two steps
    expect(valueAt(of, 'WETH', '1', 1, 'USD')).to.equal('no-rate');
    expect((valueAt(of, 'USD', '3', 1, 'USD') as { value: string }).value).to.equal('3');
    // Rounded once: 1e-18 at 0.5 EUR, at 1.5 USD a EUR, is 0.75e-18 USD: 1e-18, not 0 (rounding twice).
    const tiny = new Map<string, RateHistory>([['EUR', [team('EUR', '1.5', 'USD', 0)]], ['TOK', [team('TOK', '0.5', 'EUR', 0)]]]);
    expect((valueAt((a) => tiny.get(a), 'TOK', '0.000000000000000001', 1, 'USD') as { value: string }).value).to.equal('0.000000000000000001');
  });

  it('values another amount by the rates a valuation used: a captured amount, one rounding; none without a rate', () => {
    const eur: Rate = { asset: 'EUR', value: '1.08', currency: 'USD', validFrom: 0, decimals: null, source: 'team' };
    const eurc: Rate = { asset: 'EURC', value: '1', currency: 'EUR', validFrom: 0, decimals: 6, source: 'built-in' };
    const text = valuationText({ rate: eurc, conversion: eur });
    expect(revalued(text, '10')).to.equal('10.8');
    expect(revalued(text, '0.000000000000000001')).to.equal('0.000000000000000001');
    expect(revalued('', '0.000')).to.equal('0');
    expect(revalued('', '3')).to.equal(null);
  });
});
