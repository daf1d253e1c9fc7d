/** ISO 4217 currencies: the codes the runtime's ICU knows (162 in Node 20), the list a team currency is checked against. */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

/** What a team values in unless it says otherwise. */
export const DEFAULT_CURRENCY = 'USD';

export const isCurrency = (code: string): boolean => CURRENCIES.has(code);
