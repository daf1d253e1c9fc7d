/** The readiness rules on their own, with a clock the test sets. */
import { expect } from 'chai';
import { LOG_FAILURE_HOLD_MS, readiness, type ReadinessState } from '../../src/health/readiness.js';

const state = (over: Partial<ReadinessState> = {}): ReadinessState => ({
  stores: { registry: 'ok', clickhouse: 'ok' },
  backlog: { rows: 10, bytes: 1_000, oldestCommittedAt: 900 },
  limits: { maxRows: 100, maxBytes: 10_000 },
  loaderFailing: false,
  logFailure: undefined,
  closed: false,
  now: 1_000,
  ...over,
});
const fields = (s: ReadinessState) => readiness(s).reasons.map((r) => r.field);

describe('readiness rules', () => {
  it('a failing loader under the bound is ready; the bound in rows or in bytes is not (the test GroupCommit.write makes)', () => {
    expect(fields(state({ loaderFailing: true }))).to.deep.equal([]);
    expect(readiness(state({ loaderFailing: true })).ingest).to.include({ loader: 'failing', oldestUnloadedAgeMs: 100, backlogMaxRows: 100 });
    expect(fields(state({ backlog: { rows: 99, bytes: 9_999, oldestCommittedAt: 0 } }))).to.deep.equal([]);
    expect(fields(state({ backlog: { rows: 100, bytes: 0, oldestCommittedAt: 0 } }))).to.deep.equal(['ingest.backlogRows']);
    expect(fields(state({ backlog: { rows: 0, bytes: 10_000, oldestCommittedAt: 0 } }))).to.deep.equal(['ingest.backlogBytes']);
  });

  it('a failed log write holds readiness until a write succeeds, or for at most LOG_FAILURE_HOLD_MS when none comes', () => {
    const logFailure = { at: 1_000, message: 'database or disk is full' };
    const failing = readiness(state({ logFailure, now: 1_000 + LOG_FAILURE_HOLD_MS - 1 }));
    expect(failing.reasons.map((r) => r.field)).to.deep.equal(['ingest.log']);
    expect(failing.reasons[0]!.message).to.include('database or disk is full');
    expect(failing.ingest).to.include({ log: 'failing', logFailedAgoMs: LOG_FAILURE_HOLD_MS - 1 });
    // No write since: nothing can prove the log either way, so the instance offers itself again.
    const unverified = readiness(state({ logFailure, now: 1_000 + LOG_FAILURE_HOLD_MS }));
    expect(unverified.reasons).to.deep.equal([]);
    expect(unverified.ingest).to.include({ log: 'unverified', logFailedAgoMs: LOG_FAILURE_HOLD_MS });
    expect(readiness(state()).ingest).to.include({ log: 'ok', logFailedAgoMs: null });
  });

  it('every reason at once is listed, stores first', () => {
    const all = state({
      stores: { registry: 'failed: closed', clickhouse: 'failed: no answer within 2000 ms' },
      backlog: { rows: 100, bytes: 10_000, oldestCommittedAt: 0 },
      logFailure: { at: 999, message: 'disk I/O error' },
      closed: true,
    });
    expect(fields(all)).to.deep.equal(['stores.registry', 'status', 'ingest.backlogRows', 'ingest.backlogBytes', 'ingest.log']);
  });

  it('ClickHouse not answering is ready under the bound (records wait in the log) and unready at it; the registry not answering is unready', () => {
    const down = { registry: 'ok', clickhouse: 'failed: connect ECONNREFUSED' };
    expect(fields(state({ stores: down, loaderFailing: true }))).to.deep.equal([]);
    expect(fields(state({ stores: down, loaderFailing: true, backlog: { rows: 100, bytes: 0, oldestCommittedAt: 0 } }))).to.deep.equal(['ingest.backlogRows']);
    expect(fields(state({ stores: { registry: 'failed: Connection terminated', clickhouse: 'ok' } }))).to.deep.equal(['stores.registry']);
  });
});
