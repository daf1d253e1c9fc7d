/**
 * The settlements table through ClickHouse's HTTP interface for BI tools: real settlements (token
 * transfers on the shared local chain, checked by the verifier and copied to ClickHouse) read with
 * FINAL and joined to their events, each key seeing its own team's rows only, however it asks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { privateKeyToAccount } from 'viem/accounts';
import { NETWORK } from '../../scripts/x402-stack/chain.js';
import { startBiServer } from '../../src/clickhouse-http/interface.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import type { Reconciler } from '../../src/settlements/reconciler.js';
import { sendRecords, type Team } from '../helpers/common.js';
import { testEnv } from '../helpers/context.js';
import { chainActions, settleUntil, teamWithToken, testReconciler, type ChainActions } from '../helpers/settlements.js';
import { x402Stack } from '../helpers/x402.js';

const PAYEE = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d').address;

/** The SQL blocks of docs/bi.md that read the settlements table: the examples a reader copies. */
function documentedSettlementQueries(): string[] {
  const doc = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'bi.md'), 'utf8');
  return [...doc.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.trim().replace(/;$/, '')).filter((sql) => /\bsettlements\b/.test(sql));
}

describe('ClickHouse HTTP interface for BI tools: the settlements table', function () {
  this.timeout(120_000);
  let bi: Awaited<ReturnType<typeof startBiServer>>;
  let url: string;
  let chain: ChainActions;
  let recon: Reconciler;
  let teamA: Team;
  let teamB: Team;
  const clients: ClickHouseClient[] = [];

  const clientOf = (team: Team) => {
    const client = createClient({ url, username: 'metabase', password: team.apiKey, log: { level: ClickHouseLogLevel.OFF } });
    clients.push(client);
    return client;
  };
  const rows = async <T = Record<string, unknown>>(client: ClickHouseClient, query: string) => (await client.query({ query, format: 'JSONEachRow' })).json<T>();

  /**
   * A real payment of 0.01 token, claimed by a true record (`<prefix>ok`) and a wrong one
   * (`<prefix>wrong`, 0.02), beside a record without a hash; and `shared-id`, a record id both
   * teams use: paid in team A, without a hash in team B (a join on the id alone would pair them).
   */
  async function payAndSettle(team: Team, prefix: string, sharedPaid: boolean): Promise<void> {
    const payer = await chain.wallet();
    const paid = await chain.transfer(payer, PAYEE, 10_000n);
    const base = { agent_id: `${prefix}bot`, network: NETWORK, asset: chain.token, amount: '0.01', created_at: Date.now(), tx_hash: paid, payer_address: payer.address, payee_address: PAYEE };
    const plain = (id: string) => ({ id, agent_id: `${prefix}bot`, amount: '0.5', created_at: Date.now() });
    await sendRecords(team, [{ ...base, id: `${prefix}ok` }, { ...base, id: `${prefix}wrong`, amount: '0.02' }, plain(`${prefix}plain`), sharedPaid ? { ...base, id: 'shared-id' } : plain('shared-id')]);
    const expected = sharedPaid ? 3 : 2;
    await settleUntil(team, recon, (e) => e.length === expected && e.every((x) => x.status !== 'pending'));
  }

  before(async function () {
    this.timeout(180_000);
    const { config, deps } = testEnv();
    bi = await startBiServer(deps.clickhouseHttp!, config, 0);
    url = `http://127.0.0.1:${bi.port}`;
    chain = chainActions(await x402Stack());
    recon = testReconciler(chain.url);
    teamA = await teamWithToken('bi-settle-a', chain.token);
    teamB = await teamWithToken('bi-settle-b', chain.token);
    await payAndSettle(teamA, 'a-', true);
    await payAndSettle(teamB, 'b-', false);
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await recon?.close();
    await bi?.close();
  });

  it('SELECT … FROM settlements FINAL answers the current state of each of the team\'s settlements, and only its own', async () => {
    for (const [team, prefix] of [
      [teamA, 'a-'],
      [teamB, 'b-'],
    ] as const) {
      const client = clientOf(team);
      const found = await rows(client, 'SELECT team_id, record_id, status, differences, toString(reported_amount) AS reported, toString(observed_amount) AS observed FROM settlements FINAL ORDER BY record_id');
      const row = (id: string, status: string, reported: string) => ({ team_id: team.teamId, record_id: id, status, differences: status === 'mismatch' ? ['amount'] : [], reported, observed: '0.01' });
      expect(found).to.deep.equal([
        row(`${prefix}ok`, 'verified', '0.01'),
        row(`${prefix}wrong`, 'mismatch', '0.02'),
        ...(team === teamA ? [row('shared-id', 'verified', '0.01')] : []),
      ]);
      // Without FINAL, an older state may still be there (pending, then checked) until the engine merges: never another team's.
      expect(await rows(client, 'SELECT DISTINCT team_id FROM settlements')).to.deep.equal([{ team_id: team.teamId }]);
    }
  });

  it('joins to events on team_id and record_id: each record with its status, the documented examples included', async () => {
    const a = clientOf(teamA);
    const joined = await rows(
      a,
      `SELECT e.id AS id, e.agent_id AS agent, toString(e.amount) AS amount, s.status AS status
         FROM events AS e JOIN settlements AS s FINAL ON s.team_id = e.team_id AND s.record_id = e.id
        ORDER BY id`,
    );
    expect(joined).to.deep.equal([
      { id: 'a-ok', agent: 'a-bot', amount: '0.01', status: 'verified' },
      { id: 'a-wrong', agent: 'a-bot', amount: '0.02', status: 'mismatch' },
      { id: 'shared-id', agent: 'a-bot', amount: '0.01', status: 'verified' },
    ]);
    // A record without a hash has no settlement: a LEFT JOIN shows it with an empty status.
    const left = await rows(a, "SELECT e.id AS id, s.status AS status FROM events e LEFT JOIN settlements s FINAL ON s.team_id = e.team_id AND s.record_id = e.id WHERE e.id = 'a-plain'");
    expect(left).to.deep.equal([{ id: 'a-plain', status: '' }]);
    const documented = documentedSettlementQueries();
    expect(documented, 'docs/bi.md shows settlement queries').to.have.length.of.at.least(3);
    for (const query of documented) {
      const answer = await rows(a, query);
      // Team A has records joined to settlements (unreported transfers it has none).
      if (/\bevents\b/.test(query)) expect(answer.length, query).to.be.greaterThan(0);
      expect(JSON.stringify(answer), query).to.not.include('b-');
    }
    const [byStatus, disagreeing] = await Promise.all(documented.slice(0, 2).map((q) => rows<Record<string, string>>(a, q)));
    expect(byStatus!.map((r) => [r.status, r.records])).to.deep.equal([['verified', '2'], ['mismatch', '1']]);
    expect(disagreeing!.map((r) => [r.id, r.status, r.differences])).to.deep.equal([['a-wrong', 'mismatch', ['amount']]]);
  });

  it("team B's key never reaches team A's settlements: by filter, join, subquery, CTE, UNION, IN or FINAL", async () => {
    const b = clientOf(teamB);
    const a = teamA.teamId;
    for (const query of [
      `SELECT count() AS n FROM settlements FINAL WHERE team_id = '${a}'`,
      `SELECT count() AS n FROM settlements WHERE team_id = '${a}' SETTINGS max_threads = 1`,
      "SELECT count() AS n FROM settlements FINAL WHERE record_id LIKE 'a-%'",
      `SELECT count() AS n FROM events AS e JOIN settlements AS s FINAL ON s.record_id = e.id WHERE s.team_id = '${a}' OR e.team_id = '${a}'`,
      `SELECT count() AS n FROM (SELECT * FROM spendscope.settlements FINAL) WHERE team_id = '${a}'`,
      `WITH s AS (SELECT team_id FROM settlements FINAL) SELECT count() AS n FROM s WHERE team_id = '${a}'`,
      `SELECT count() AS n FROM (SELECT team_id FROM settlements UNION ALL SELECT team_id FROM settlements FINAL) WHERE team_id = '${a}'`,
      `SELECT count() AS n FROM events WHERE id IN (SELECT record_id FROM settlements FINAL WHERE team_id = '${a}')`,
      `SELECT count() AS n FROM settlements AS s1 FINAL JOIN settlements AS s2 FINAL ON s1.tx_hash = s2.tx_hash WHERE s2.team_id = '${a}'`,
    ]) {
      expect(await rows(b, query), query).to.deep.equal([{ n: '0' }]);
    }
    // B's record shared-id has no settlement; A's of the same id is not B's to pair, even by a join on the id alone.
    const shared = await rows(b, "SELECT e.team_id AS et, s.team_id AS st FROM events e LEFT JOIN settlements s FINAL ON s.record_id = e.id WHERE e.id = 'shared-id'");
    expect(shared).to.deep.equal([{ et: teamB.teamId, st: '' }]);
    expect(await rows(b, "SELECT count() AS n FROM settlements FINAL WHERE record_id = 'shared-id'")).to.deep.equal([{ n: '0' }]);
    expect(await rows(b, 'SELECT groupUniqArray(team_id) AS teams FROM settlements FINAL')).to.deep.equal([{ teams: [teamB.teamId] }]);
  });

  it('a qualified column left of IN is a column (as BI tools write filters); a table right of IN is still checked', async () => {
    const a = clientOf(teamA);
    expect(await rows(a, "SELECT count() AS n FROM events AS e JOIN settlements AS s FINAL ON s.team_id = e.team_id AND s.record_id = e.id WHERE s.status IN ('mismatch', 'failed') AND e.agent_id NOT IN ('nobody')")).to.deep.equal([{ n: '1' }]);
    expect(await rows(a, "SELECT count() AS n FROM settlements AS s FINAL WHERE (s.status, s.record_id) IN (('verified', 'a-ok'))")).to.deep.equal([{ n: '1' }]);
    for (const query of [
      'SELECT count() FROM settlements AS s WHERE s.record_id IN system.parts',
      'SELECT count() FROM settlements AS s WHERE s.record_id NOT IN system.processes',
      'SELECT count() FROM settlements AS s WHERE in(s.record_id, system.parts)',
      'SELECT count() FROM settlements AS s WHERE (s.record_id IN system.parts) IN (1)',
      'SELECT count() FROM settlements AS s WHERE s.record_id IN (SELECT name FROM system.parts)',
    ]) {
      const refused = await a.query({ query, format: 'JSONEachRow' }).then(
        () => undefined,
        (err: { code?: string }) => err,
      );
      expect(refused, query).to.include({ code: '497' });
    }
  });

  it('is described in the catalog as every table: SHOW TABLES, DESCRIBE and column comments', async () => {
    const b = clientOf(teamB);
    const tables = (await (await b.query({ query: 'SHOW TABLES', format: 'TabSeparated' })).text()).trim().split('\n');
    expect(tables).to.include('settlements');
    const columns = await rows<{ name: string; comment: string }>(b, "SELECT name, comment FROM system.columns WHERE table = 'settlements' ORDER BY position");
    expect(columns.map((c) => c.name)).to.include.members(['team_id', 'record_id', 'status', 'differences', 'reported_amount', 'observed_amount', 'version']);
    expect(columns.every((c) => c.comment !== ''), 'every column has a comment').to.equal(true);
    const described = (await (await b.query({ query: 'DESCRIBE TABLE settlements', format: 'TabSeparated' })).text()).split('\n').map((l) => l.split('\t')[0]);
    expect(described).to.include('status');
    expect(await rows(b, "SELECT engine FROM system.tables WHERE name = 'settlements'")).to.deep.equal([{ engine: 'ReplacingMergeTree' }]);
  });
});
