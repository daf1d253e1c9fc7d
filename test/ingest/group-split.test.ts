/** A burst queued at once is committed in several bounded groups, whole requests each, with turns of the event loop between. */
import { expect } from 'chai';
import type { AuthorizationRequest } from '../../src/authorizations/decision.js';
import type { AckEvaluator } from '../../src/ingest/group-commit.js';
import { GroupCommit } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import type { EventRow } from '../../src/ingest/records.js';
import { done } from '../../src/stores/sql.js';
import { newTeam, testEnv, registryCommits } from '../helpers/context.js';
import { event } from './fixtures.js';

describe('group commit size', () => {
  it('takes whole requests up to groupMaxRows records per group (a larger request alone), yielding the event loop between groups', async () => {
    const { deps } = testEnv();
    const team = await newTeam('groups');
    const groups: { rows: number; turn: number }[] = [];
    let turn = 0;
    let spinning = true;
    const spin = () => {
      turn++;
      if (spinning) setImmediate(spin);
    };
    spin();
    // An evaluator that records what each group's transaction evaluates.
    const recorder: AckEvaluator<{ rows: readonly EventRow[] }> = {
      prepare: async (rows) => ({ rows }),
      // eslint-disable-next-line require-yield
      apply: function* (plan) {
        groups.push({ rows: plan.rows.length, turn });
        return plan.rows.map(() => 0);
      },
      decide: () => done([]),
      reset: () => {},
      release: () => false,
      extendHold: () => false,
    };
    const limits = { maxRows: deps.config.ingest.backlogMaxRows, maxBytes: deps.config.ingest.backlogMaxBytes };
    const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger, recorder as AckEvaluator<unknown>, undefined, undefined, {
      groupMaxRows: 500,
    });
    const ingestor = new Ingestor(deps.schemas, commit);
    const sizes = [100, 100, 100, 100, 100, 700, 100, 100, 100, 100, 100, 100];
    let n = 0;
    const batch = (size: number) => Array.from({ length: size }, () => event({ id: `split-${process.pid}-${n++}`, amount: '0.01' }));
    try {
      // All queued in one turn, before the first group starts.
      const results = await Promise.all(sizes.map((size) => ingestor.ingest(team.teamId, batch(size), 'events')));
      expect(results.map((r) => r.ingested)).to.deep.equal(sizes);
      expect(results.every((r) => r.duplicates === 0)).to.equal(true);
      expect(groups.map((g) => g.rows)).to.deep.equal([500, 700, 500, 100]);
      for (let g = 1; g < groups.length; g++) expect(groups[g]!.turn, `a turn of the loop before group ${g + 1}`).to.be.above(groups[g - 1]!.turn);
    } finally {
      spinning = false;
      await commit.close();
    }
  });

  it('takes authorizations up to groupMaxChecks checks (a heavier one alone) and groupMaxDecisions per group', async () => {
    const { deps } = testEnv();
    const decided: number[][] = [];
    const recorder: AckEvaluator<{ requests: readonly AuthorizationRequest[] }> = {
      prepare: async (_rows, _now, requests = []) => ({ requests }),
      apply: () => done([]),
      // eslint-disable-next-line require-yield
      decide: function* (plan) {
        decided.push(plan.requests.map((r) => (r as unknown as { weight: number }).weight));
        return plan.requests.map(() => ({ unavailable: true as const }));
      },
      // What the evaluator says a decision lists: the checks of the agent's policies.
      weigh: (request) => (request as unknown as { weight: number }).weight,
      reset: () => {},
      release: () => false,
      extendHold: () => false,
    };
    const limits = { maxRows: deps.config.ingest.backlogMaxRows, maxBytes: deps.config.ingest.backlogMaxBytes };
    const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger, recorder as AckEvaluator<unknown>, undefined, undefined, {
      groupMaxChecks: 10_000,
      groupMaxDecisions: 3,
    });
    const weights = [4_000, 4_000, 4_000, 30_000, 1, 1, 1, 1, 1];
    try {
      const answers = await Promise.allSettled(weights.map((weight) => commit.authorize({ teamId: 't', agentId: 'a', weight } as unknown as AuthorizationRequest)));
      // Each answered (here: unavailable, as the recorder decides), none lost.
      expect(answers.every((a) => a.status === 'rejected')).to.equal(true);
      expect(decided).to.deep.equal([[4_000, 4_000], [4_000], [30_000], [1, 1, 1], [1, 1]]);
    } finally {
      await commit.close();
    }
  });
});
