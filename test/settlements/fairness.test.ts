/** The verifier's rounds are shared between teams: one team's flood of records does not hold back another's checks. */
import { expect } from 'chai';
import { describeOnEachRegistry, newTeam, testEnv } from '../helpers/context.js';
import { dueSettlements, insertSettlements, TEAMS_PER_ROUND, type NewSettlement } from '../../src/settlements/repository.js';

const NETWORK = 'eip155:84532';

const pending = (teamId: string, recordId: string, at: number): NewSettlement => ({
  teamId, recordId, agentId: 'bot', network: NETWORK, txHash: `0x${recordId.padStart(64, '0')}`, status: 'pending',
  reported: { amount: '1', amount_raw: '1000000', asset: 'USDC', token: '0x036cbd53842c5426634e7929541ec2318f3dcf7e', payer: null, payee: null },
  note: null, occurredAt: at, receivedAt: at,
});

describeOnEachRegistry('settlements: each team has a share of every verification round', function () {
  it('a team with one record due is served in the round, however many older records another team has due', async () => {
    const { db } = testEnv().deps;
    const flood = await newTeam('flood');
    const quiet = await newTeam('quiet');
    const t0 = Date.now();
    // The flood's records were due first: oldest-first alone would give it every place of the round.
    await insertSettlements(db, Array.from({ length: 300 }, (_, i) => pending(flood.teamId, `f${i}`, t0)), t0);
    await insertSettlements(db, [pending(quiet.teamId, 'q1', t0)], t0 + 1_000);

    const { due } = await dueSettlements(db, NETWORK, t0 + 2_000, 100);
    expect(due).to.have.length(100);
    expect(due.filter((s) => s.teamId === quiet.teamId).map((s) => s.recordId)).to.deep.equal(['q1']);
    expect(due.filter((s) => s.teamId === flood.teamId)).to.have.length(99);
    // Within a team, oldest due first.
    expect(due.filter((s) => s.teamId === flood.teamId).every((s) => s.nextCheckAt === t0)).to.equal(true);
  });

  it('with more teams than places, turns go round: every team is served within a few rounds', async () => {
    const { db } = testEnv().deps;
    const teams = [];
    for (let i = 0; i < TEAMS_PER_ROUND + 10; i++) teams.push(await newTeam(`turns-${i}`));
    const t0 = Date.now();
    for (const team of teams) await insertSettlements(db, [pending(team.teamId, 'a', t0), pending(team.teamId, 'b', t0)], t0);
    const mine = new Set(teams.map((t) => t.teamId));

    const served = new Set<string>();
    let after = '';
    const rounds: number[] = [];
    for (let round = 0; round < 3; round++) {
      const { due, lastTeam } = await dueSettlements(db, NETWORK, t0 + 1, TEAMS_PER_ROUND, after);
      after = lastTeam;
      // Teams of other tests may have settlements pending on the network too: only this test's count.
      const ours = due.filter((s) => mine.has(s.teamId));
      rounds.push(new Set(ours.map((s) => s.teamId)).size);
      for (const s of ours) served.add(s.teamId);
    }
    expect(served.size, `teams served per round: ${rounds.join(', ')}`).to.equal(teams.length);
  });
});
