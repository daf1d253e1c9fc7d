/**
 * spendscope in front of an x402 client (`@x402/core`'s x402Client, as `@x402/fetch` and
 * `@x402/axios` use it): before a payment is signed, spendscope is asked whether the agent may pay
 * (POST /authorizations, the requirement's atomic amount as `amount_raw`); after the paid request,
 * a settled payment captures the hold with the settlement's transaction, and an unsettled one
 * voids it. Nothing here reads or keeps the signed payment itself.
 */
import type { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';

export interface SpendscopeOptions {
  /** The service's base, `http://host:port` (the package adds `/api/v1`). */
  url: string;
  /** A key with the `ingest` scope. */
  apiKey: string;
  /** The agent paying: its external id, as its records carry. */
  agentId: string;
  /** How long to wait for a person when an `approve` policy asks one (seconds; default 30). */
  approvalWaitS?: number;
  /** spendscope unreachable or failing (5xx): abort the payment (`deny`, the default) or pay anyway (`allow`). */
  onUnavailable?: 'deny' | 'allow';
  /** The fetch to reach spendscope with (default: the global one). */
  fetch?: typeof fetch;
  /** Told of a capture or void that could not be delivered after its retries (the hold then stays until it expires). */
  onError?: (error: Error) => void;
}

interface Authorization {
  id: string;
  expires_at: string;
  decision: 'approved' | 'declined' | 'pending';
  status: string;
  amount: string;
  reasons: string[];
}

/** spendscope could not answer: unreachable, timed out, or a 5xx. */
class Unavailable extends Error {}

/** A 4xx from spendscope: the request itself is wrong (an unknown asset's decimals, a bad key). */
class Refused extends Error {}

const RETRIES = 3;
const CALL_TIMEOUT_MS = 10_000;
/** How long an entry is kept when its authorization says no expiry (the service's default hold). */
const HOLD_FALLBACK_MS = 300_000;

/** Registers the hooks on `client` and returns it. */
export function withSpendscope(client: x402Client, options: SpendscopeOptions): x402Client {
  const base = `${options.url.replace(/\/+$/, '')}/api/v1`;
  const send = options.fetch ?? fetch;
  const waitS = options.approvalWaitS ?? 30;
  const allowUnavailable = options.onUnavailable === 'allow';
  // The hooks of one payment share its requirements object, then its payload: the hold rides along.
  const byRequirements = new WeakMap<object, Authorization>();
  // By the payload's nonce (one per signed payment), so a payload decoded again (trackAxiosPayments) finds its hold.
  const byPayload = new Map<string, { auth: Authorization; requirements: { amount: string }; forget: ReturnType<typeof setTimeout> }>();

  /** One call to spendscope; `waitS` is how long the service may hold it (a long poll), beyond the timeout. */
  async function call(method: string, path: string, body?: unknown, waitS = 0): Promise<Authorization> {
    let res: Response;
    let text: string;
    try {
      res = await send(`${base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${options.apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // A service that hangs is one that is down: the payment does not hang with it.
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS + waitS * 1000),
      });
      text = await res.text();
    } catch (err) {
      throw new Unavailable(`spendscope unreachable: ${(err as Error).message}`);
    }
    if (res.status >= 500) throw new Unavailable(`spendscope answered ${res.status}`);
    if (res.status >= 400) {
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {
        // not JSON: the text as it is
      }
      throw new Refused(`spendscope refused (${res.status}): ${message}`);
    }
    try {
      return JSON.parse(text) as Authorization;
    } catch {
      throw new Unavailable(`spendscope answered ${res.status} with no JSON`);
    }
  }

  /** A capture or void, retried: both are idempotent on the service. */
  async function settle(path: string, body: unknown): Promise<void> {
    let last: Error | undefined;
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      try {
        await call('POST', path, body);
        return;
      } catch (err) {
        last = err as Error;
        if (err instanceof Refused || attempt === RETRIES - 1) break;
        await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
      }
    }
    report(last!);
  }

  /** Tells onError, never throwing into the payment's flow. */
  function report(error: Error): void {
    try {
      options.onError?.(error);
    } catch {
      // the caller's handler failed: nothing more to tell
    }
  }

  /** Waits for a person's decision on a pending authorization, up to approvalWaitS. */
  async function decided(auth: Authorization): Promise<Authorization> {
    const deadline = Date.now() + waitS * 1000;
    let current = auth;
    while (current.status === 'pending') {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left <= 0) break;
      const wait = Math.min(60, left);
      try {
        current = await call('GET', `/authorizations/${encodeURIComponent(auth.id)}?wait=${wait}`, undefined, wait);
      } catch (err) {
        // A long poll a proxy cut short: asked again until the deadline; a refusal ends the wait.
        if (err instanceof Refused) throw err;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    return current;
  }

  client.onBeforePaymentCreation(async ({ paymentRequired, selectedRequirements: req }) => {
    const ask = {
      agent_id: options.agentId,
      endpoint: paymentRequired.resource?.url,
      amount_raw: req.amount,
      asset: req.asset,
      network: req.network,
      payee_address: req.payTo,
    };
    let auth: Authorization;
    try {
      auth = await call('POST', '/authorizations', ask);
    } catch (err) {
      if (err instanceof Unavailable) {
        if (allowUnavailable) return;
        return { abort: true, reason: `${err.message}; not paying (onUnavailable: 'deny')` };
      }
      return { abort: true, reason: (err as Error).message };
    }
    if (auth.decision === 'pending') {
      // Asked a person: only their approval pays, whatever onUnavailable says.
      try {
        auth = await decided(auth);
      } catch (err) {
        await settle(`/authorizations/${encodeURIComponent(auth.id)}/void`, undefined);
        return { abort: true, reason: `${(err as Error).message} while waiting for a decision on authorization ${auth.id}; not paying` };
      }
      if (auth.status === 'pending') {
        // Nobody decided in time: withdrawn, so a late approval does not hold money for nothing.
        await settle(`/authorizations/${encodeURIComponent(auth.id)}/void`, undefined);
        return { abort: true, reason: `spendscope: no decision within ${waitS} s on authorization ${auth.id}; not paying` };
      }
    }
    if (auth.status !== 'held') return { abort: true, reason: `spendscope ${auth.status} authorization ${auth.id}: ${auth.reasons.join('; ')}` };
    byRequirements.set(req, auth);
  });

  // Approved, but the payment could not be signed (a wallet that failed): nothing will be paid, so the hold goes.
  client.onPaymentCreationFailure(async ({ selectedRequirements }) => {
    const auth = byRequirements.get(selectedRequirements);
    if (!auth) return;
    byRequirements.delete(selectedRequirements);
    await settle(`/authorizations/${encodeURIComponent(auth.id)}/void`, undefined);
  });

  client.onAfterPaymentCreation(async ({ selectedRequirements, paymentPayload }) => {
    const auth = byRequirements.get(selectedRequirements);
    if (!auth) return;
    byRequirements.delete(selectedRequirements);
    const key = payloadKey(paymentPayload);
    // A paid request that never comes back leaves its hold to expire: its entry goes then too.
    const forget = setTimeout(() => byPayload.delete(key), Math.max(0, Date.parse(auth.expires_at) - Date.now()) || HOLD_FALLBACK_MS);
    (forget as { unref?: () => void }).unref?.();
    byPayload.set(key, { auth, requirements: selectedRequirements, forget });
  });

  client.onPaymentResponse(async ({ paymentPayload, requirements, settleResponse, paymentRequired }) => {
    const key = payloadKey(paymentPayload);
    const held = byPayload.get(key);
    if (!held) return;
    byPayload.delete(key);
    clearTimeout(held.forget);
    const path = `/authorizations/${encodeURIComponent(held.auth.id)}`;
    try {
      if (settleResponse?.success === false || (!settleResponse && paymentRequired)) {
        // Not settled (the server said so, or answered 402 again): nothing moved.
        await settle(`${path}/void`, undefined);
        return;
      }
      if (!settleResponse) {
        // An answer without a settlement: paid or not cannot be told here. The hold stays until it
        // expires (the budget reserved, as an ambiguous outcome should be); reconciliation finds the truth.
        report(new Error(`no settlement in the paid answer for authorization ${held.auth.id}: left held until it expires`));
        return;
      }
      const paid = settleResponse.amount ?? requirements.amount;
      if (!/^\d+$/.test(paid) || BigInt(paid) > BigInt(held.requirements.amount)) {
        report(new Error(`settled amount "${paid}" is not an atomic amount within the held ${held.requirements.amount}: captured the held amount`));
      } else if (BigInt(paid) === 0n) {
        await settle(`${path}/void`, undefined);
        return;
      }
      const exact = /^\d+$/.test(paid) && BigInt(paid) > 0n && BigInt(paid) < BigInt(held.requirements.amount);
      await settle(`${path}/capture`, {
        ...(exact ? { amount: scaled(held.auth.amount, paid, held.requirements.amount) } : {}),
        ...(settleResponse.transaction ? { tx_hash: settleResponse.transaction } : {}),
        ...(settleResponse.payer ? { payer_address: settleResponse.payer } : {}),
        ...(settleResponse.network ? { network: settleResponse.network } : {}),
        settled_at: new Date().toISOString(),
      });
    } catch (err) {
      // Never into the paid request's flow: the payment is made, whatever befell its record.
      report(err as Error);
    }
  });

  return client;
}

/** What tells one signed payment from another: its EIP-3009 nonce, else the whole signed part. */
function payloadKey(payload: PaymentPayload): string {
  const nonce = (payload.payload as { authorization?: { nonce?: unknown } }).authorization?.nonce;
  return typeof nonce === 'string' ? nonce : JSON.stringify(payload.payload);
}

/** The part of an axios instance trackAxiosPayments uses. */
interface AxiosLike {
  interceptors: {
    response: {
      // any: axios's own interceptor types, which this package does not import.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      use(onFulfilled: (response: any) => any, onRejected: (error: any) => any): unknown;
    };
  };
}

interface AxiosResponseLike {
  status: number;
  headers: Record<string, unknown> & { get?: (name: string) => unknown };
  config: { headers?: Record<string, unknown> & { get?: (name: string) => unknown } };
}

const header = (headers: AxiosResponseLike['headers'] | undefined, name: string): string | undefined => {
  if (!headers) return undefined;
  const value = typeof headers.get === 'function' ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
  return typeof value === 'string' ? value : undefined;
};

/**
 * For `@x402/axios` (2.11), which runs no hook after the paid request: reads each paid answer's
 * settlement (PAYMENT-RESPONSE) and hands it to the client's payment-response hooks, so
 * withSpendscope captures or voids as under `@x402/fetch`. Add it after wrapAxiosWithPayment.
 */
export function trackAxiosPayments<T extends AxiosLike>(instance: T, client: x402Client): T {
  // The payment wrapper retries the request through the same instance: each answer is handed over once.
  const seen = new WeakSet<object>();
  const observe = async (response: AxiosResponseLike | undefined) => {
    const signed = header(response?.config.headers, 'PAYMENT-SIGNATURE') ?? header(response?.config.headers, 'X-PAYMENT');
    if (!response || !signed || seen.has(response)) return;
    seen.add(response);
    try {
      const paymentPayload = decodePaymentSignatureHeader(signed);
      const settled = header(response.headers, 'PAYMENT-RESPONSE') ?? header(response.headers, 'X-PAYMENT-RESPONSE');
      const settleResponse = settled ? decodePaymentResponseHeader(settled) : undefined;
      const required = !settleResponse && response.status === 402 ? header(response.headers, 'PAYMENT-REQUIRED') : undefined;
      const paymentRequired = required ? decodePaymentRequiredHeader(required) : undefined;
      await client.handlePaymentResponse({ paymentPayload, requirements: paymentPayload.accepted, ...(settleResponse ? { settleResponse } : {}), ...(paymentRequired ? { paymentRequired } : {}) });
    } catch {
      // A header that does not decode: the answer is the caller's all the same.
    }
  };
  instance.interceptors.response.use(
    async (response: AxiosResponseLike) => {
      await observe(response);
      return response;
    },
    async (error: { response?: AxiosResponseLike }) => {
      await observe(error.response);
      throw error;
    },
  );
  return instance;
}

/** `amount` (a decimal string for `raw` atomic units) scaled to `paidRaw` atomic units, exactly (18 places). */
function scaled(amount: string, paidRaw: string, raw: string): string {
  const [whole, fraction = ''] = amount.split('.');
  const units = BigInt(whole! + fraction.padEnd(18, '0'));
  const paid = (units * BigInt(paidRaw)) / BigInt(raw);
  const digits = paid.toString().padStart(19, '0');
  const frac = digits.slice(-18).replace(/0+$/, '');
  return `${digits.slice(0, -18)}${frac ? `.${frac}` : ''}`;
}
