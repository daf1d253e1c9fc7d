/**
 * A paid API (`@x402/express`) on the local chain, in the test token: GET /cheap costs 0.01 and
 * GET /dear 0.25 (atomic units of a 6-decimal token), paid to `payTo`, settled by `facilitatorUrl`.
 */
import express from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import type { Address } from 'viem';
import { NETWORK } from './chain.js';

/** The two prices, in the token's atomic units (6 decimals). */
export const PRICES = { cheap: '10000', dear: '250000' } as const;

export interface PaidApi {
  url: string;
  /** Requests the handlers answered (paid ones, and ones whose settlement then failed). */
  served: number;
  close(): Promise<void>;
}

export async function startPaidApi(facilitatorUrl: string, token: Address, payTo: Address): Promise<PaidApi> {
  const price = (amount: string) => ({ amount, asset: token, extra: { name: 'USD Coin', version: '2' } });
  const route = (amount: string, description: string) => ({
    accepts: [{ scheme: 'exact', price: price(amount), network: NETWORK, payTo }],
    description,
    mimeType: 'application/json',
  });
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(NETWORK, new ExactEvmScheme());
  const state = { served: 0 };
  const app = express();
  app.use(paymentMiddleware({ 'GET /cheap': route(PRICES.cheap, 'A cheap answer'), 'GET /dear': route(PRICES.dear, 'A dear answer') } as never, server));
  app.get('/cheap', (_req, res) => {
    state.served++;
    res.json({ answer: 'cheap' });
  });
  app.get('/dear', (_req, res) => {
    state.served++;
    res.json({ answer: 'dear' });
  });
  const listener = http.createServer(app);
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get served() {
      return state.served;
    },
    close: () => new Promise((resolve) => listener.close(() => resolve())),
  };
}
