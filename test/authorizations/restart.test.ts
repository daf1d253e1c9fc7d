/** Holds survive a kill -9: they are in the registry, and read back at start-up. */
import { expect } from 'chai';
import { callWithKey, startService, tempDir } from '../helpers/processes.js';

const KEY = 'authorization-restart-key-0123456789ab';

const call = (baseUrl: string, method: string, path: string, body?: unknown) => callWithKey(baseUrl, KEY, method, path, body);

describe('authorization holds across a kill -9', function () {
  this.timeout(90_000);

  it('a hold still counts after the restart, and one that expired meanwhile does not', async () => {
    const env = { DATA_DIR: tempDir('authorization-restart'), BOOTSTRAP_API_KEY: KEY };
    const ask = (baseUrl: string, agent: string, amount: string, expires?: number) =>
      call(baseUrl, 'POST', '/api/v1/authorizations', { agent_id: agent, endpoint: 'https://api.example.com/x', amount, asset: 'USDC', ...(expires ? { expires_in_s: expires } : {}) });
    const first = await startService(env);
    let held: string;
    try {
      expect((await call(first.baseUrl, 'POST', '/api/v1/policies', { name: 'day', action: 'block', limits: [{ kind: 'daily', amount: '10' }] })).status).to.equal(201);
      const long = await ask(first.baseUrl, 'a1', '8');
      expect(long.body.decision).to.equal('approved');
      held = long.body.id;
      expect((await ask(first.baseUrl, 'a2', '10', 2)).body.decision).to.equal('approved');
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }

    const second = await startService(env);
    try {
      // a1's 8 is still held: 3 more would break 10.
      expect((await ask(second.baseUrl, 'a1', '3')).body.decision).to.equal('declined');
      expect((await ask(second.baseUrl, 'a1', '2')).body.decision).to.equal('approved');
      expect((await call(second.baseUrl, 'GET', `/api/v1/authorizations/${held!}`)).body.status).to.equal('held');
      // a2's hold lapsed (2 s): all 10 are free again.
      await new Promise((r) => setTimeout(r, 2_100));
      expect((await ask(second.baseUrl, 'a2', '10')).body.decision).to.equal('approved');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('a pending authorization (waiting for a person) still holds after a kill -9, and can be approved after it', async () => {
    const env = { DATA_DIR: tempDir('approval-restart'), BOOTSTRAP_API_KEY: KEY };
    const ask = (baseUrl: string, amount: string) => call(baseUrl, 'POST', '/api/v1/authorizations', { agent_id: 'a1', endpoint: 'https://api.example.com/x', amount, asset: 'USDC' });
    const first = await startService(env);
    let pending: string;
    try {
      expect((await call(first.baseUrl, 'POST', '/api/v1/policies', { name: 'ask above 5', action: 'approve', limits: [{ kind: 'per_call', amount: '5' }] })).status).to.equal(201);
      expect((await call(first.baseUrl, 'POST', '/api/v1/policies', { name: 'day', action: 'block', limits: [{ kind: 'daily', amount: '10' }] })).status).to.equal(201);
      const big = await ask(first.baseUrl, '8');
      expect(big.body.status).to.equal('pending');
      pending = big.body.id;
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }
    const second = await startService(env);
    try {
      // The 8 waiting for a person still counts: 3 more would break 10.
      expect((await ask(second.baseUrl, '3')).body.decision).to.equal('declined');
      const approved = await call(second.baseUrl, 'POST', `/api/v1/authorizations/${pending!}/approve`, {});
      expect(approved.status).to.equal(200);
      expect(approved.body).to.include({ status: 'held', decision: 'approved' });
      expect((await ask(second.baseUrl, '2')).body.decision).to.equal('approved');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
