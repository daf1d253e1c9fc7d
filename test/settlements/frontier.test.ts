/** The load frontier the verifier's intake reads up to: nothing below it can still reach ClickHouse. */
import { expect } from 'chai';
import { SharedLoadFrontier } from '../../src/ingest/shared-freshness.js';
import { sendRecords } from '../helpers/common.js';
import { describeOnEachRegistry, newTeam, testEnv } from '../helpers/context.js';

describeOnEachRegistry('settlements: the intake reads up to the load frontier', function (dialect) {
  it('records acknowledged are below the frontier once loaded, and every record committed before its time is below it', async () => {
    const team = await newTeam('frontier');
    await sendRecords(team, [{ id: 'f1', agent_id: 'bot', amount: '0.01', asset: 'USDC', created_at: Date.now() }]);
    await testEnv().deps.readEvents(team.teamId);
    const [row] = await testEnv().deps.events.query<{ pos: string }>('SELECT toString(log_pos) AS pos FROM events WHERE team_id = {t:String} AND id = {id:String}', { t: team.teamId, id: 'f1' });
    const committed = Date.now();
    const frontier = dialect === 'postgres' ? new SharedLoadFrontier(testEnv().deps.db, 200) : undefined;
    const through = async (now: number) => (frontier ? frontier.through(now) : testEnv().deps.ingest.freshness.loadFrontier(now));
    if (frontier) {
      // Positions count only once taken the margin ago: the first sample settles nothing yet.
      expect(await through(committed)).to.deep.equal({ pos: 0, at: 0 });
    }
    const later = await through(committed + 250);
    expect(later.pos).to.be.at.least(Number(row!.pos));
    expect(later.at).to.be.at.least(committed - 1);
  });

  if (dialect === 'postgres') {
    it('a position taken after the settled sample is not passed, though nothing below it is unloaded', async () => {
      const { db } = testEnv().deps;
      const frontier = new SharedLoadFrontier(db, 1_000);
      const t = Date.now();
      await frontier.through(t);
      // A commit that took its position and has not committed yet.
      const taken = Number((await db.get<{ pos: string }>("SELECT nextval('ingest_positions') AS pos"))!.pos);
      await frontier.through(t + 500);
      expect((await frontier.through(t + 1_000)).pos, 'the sample taken before the position').to.be.below(taken);
      expect((await frontier.through(t + 1_500)).pos, 'the sample taken after it, once settled').to.be.at.least(taken);
    });
  }
});
