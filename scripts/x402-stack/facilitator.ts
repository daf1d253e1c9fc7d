/**
 * An x402 facilitator for the local chain (`@x402/core`'s x402Facilitator with `@x402/evm`'s exact
 * scheme), served over HTTP as a paid API's HTTPFacilitatorClient expects: /verify, /settle,
 * /supported. `failSettlement` makes every settlement fail (a facilitator that cannot settle).
 */
import express from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { createWalletClient, http as viemHttp, publicActions, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { NETWORK } from './chain.js';

export interface Facilitator {
  url: string;
  /** Settlements fail from now on (true) or succeed again (false). */
  failSettlement(fail: boolean): void;
  /** Milliseconds each verify took, in order. */
  verifyMs: number[];
  close(): Promise<void>;
}

export async function startFacilitator(rpcUrl: string, key: Hex): Promise<Facilitator> {
  const account = privateKeyToAccount(key);
  const viemClient = createWalletClient({ account, chain: hardhat, transport: viemHttp(rpcUrl) }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => viemClient.getCode(args),
    readContract: (args) => viemClient.readContract({ ...args, args: args.args ?? [] } as never),
    verifyTypedData: (args) => viemClient.verifyTypedData(args as never),
    writeContract: (args) => viemClient.writeContract({ ...args, args: args.args ?? [] } as never),
    sendTransaction: (args) => viemClient.sendTransaction(args),
    waitForTransactionReceipt: (args) => viemClient.waitForTransactionReceipt(args),
  });
  let failing = false;
  let queue: Promise<void> = Promise.resolve();
  const verifyMs: number[] = [];
  const facilitator = new x402Facilitator();
  facilitator.register(NETWORK, new ExactEvmScheme(signer));

  const app = express();
  app.use(express.json());
  app.post('/verify', async (req, res) => {
    const { paymentPayload, paymentRequirements } = req.body as { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements };
    const started = performance.now();
    try {
      res.json(await facilitator.verify(paymentPayload, paymentRequirements));
    } catch (err) {
      res.status(500).json({ error: (err as Error).message });
    } finally {
      verifyMs.push(performance.now() - started);
    }
  });
  app.post('/settle', async (req, res) => {
    const { paymentPayload, paymentRequirements } = req.body as { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements };
    if (failing) {
      res.json({ success: false, errorReason: 'settlement_failed_for_the_test', transaction: '', network: paymentRequirements.network });
      return;
    }
    // One settlement at a time: its transaction takes the signer's next nonce, as a real facilitator's queue does.
    const settled = queue.then(() => facilitator.settle(paymentPayload, paymentRequirements));
    queue = settled.then(
      () => undefined,
      () => undefined,
    );
    try {
      res.json(await settled);
    } catch (err) {
      res.status(500).json({ error: (err as Error).message });
    }
  });
  app.get('/supported', (_req, res) => {
    res.json(facilitator.getSupported());
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    failSettlement: (fail) => {
      failing = fail;
    },
    verifyMs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
