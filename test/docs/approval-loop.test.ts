/**
 * The README's approval loop (authorize, wait, pay or give up) is code a reader copies: it is run
 * here as written, against the service, with a person approving one payment and denying another.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PROJECT_ROOT } from '../../src/paths.js';
import { askAbove, newPolicy, sleep } from '../helpers/common.js';
import { api, newTeam, testEnv } from '../helpers/context.js';

type PayWithApproval = (
  base: string,
  key: string,
  ask: Record<string, unknown>,
  pay: () => Promise<unknown>,
) => Promise<{ paid: boolean; receipt?: unknown; reasons?: string[] }>;

/** The README's `js` block under "Asking a person", as a function. */
function readmeLoop(): PayWithApproval {
  const readme = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Asking a person'));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  return new Function(`${code}\nreturn payWithApproval;`)() as PayWithApproval;
}

describe("the README's approval loop", function () {
  this.timeout(60_000);

  it('approved: it waits, pays once and captures; denied: it gives up with the reasons and pays nothing', async () => {
    const payWithApproval = readmeLoop();
    const team = await newTeam('readme-loop');
    await newPolicy(team, askAbove('5'));
    const server = http.createServer(testEnv().app).listen(0);
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      // A person decides each pending authorization a moment after it appears.
      const decideNext = async (verdict: 'approve' | 'deny') => {
        for (;;) {
          const pending = (await api().get('/api/v1/authorizations?status=pending').set(...team.auth).expect(200)).body.data;
          if (pending.length > 0) return api().post(`/api/v1/authorizations/${pending[0].id}/${verdict}`).set(...team.auth).send({ note: 'from the test' }).expect(200);
          await sleep(100);
        }
      };
      let payments = 0;
      const ask = { agent_id: 'bot', endpoint: 'https://api.example.com/v1/report', amount: '7', asset: 'USDC' };
      const [approved] = await Promise.all([payWithApproval(base, team.apiKey, ask, async () => ++payments), decideNext('approve')]);
      expect(approved).to.deep.equal({ paid: true, receipt: 1 });
      const [denied] = await Promise.all([payWithApproval(base, team.apiKey, ask, async () => ++payments), decideNext('deny')]);
      expect(denied.paid).to.equal(false);
      expect(denied.reasons!.at(-1)).to.equal('Denied by default: from the test');
      expect(payments).to.equal(1);
      // The approved one was captured: its record is the team's only spend.
      const captured = (await api().get('/api/v1/authorizations?status=captured').set(...team.auth).expect(200)).body.data;
      expect(captured).to.have.length(1);
      expect(captured[0]).to.include({ captured_amount: '7', decided_by: 'default' });
      // Below the limit, nobody is asked.
      expect(await payWithApproval(base, team.apiKey, { ...ask, amount: '2' }, async () => 'ok')).to.deep.equal({ paid: true, receipt: 'ok' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
