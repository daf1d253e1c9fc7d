/**
 * The write path behind the acknowledgement: the ingest log, its loader and what reads see. All on
 * the shared real SQLite file and embedded engine; failures are real ones (a detached ClickHouse
 * table, a line ClickHouse cannot parse, a chunk cut short).
 */
import { expect } from 'chai';
import { GroupCommit } from '../../src/ingest/group-commit.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { recordToRow } from '../../src/ingest/records.js';
import { insertBlock, LOG_COLUMNS, type BlockBody } from '../../src/ingest/blocks.js';
import type { EventRow } from '../../src/ingest/records.js';
import { rowBinaryOf } from '../../src/ingest/rowbinary.js';
import { rowToTsv, TSV_COLUMNS } from '../../src/ingest/tsv.js';
import { api, appWith, errorOf, loadedEvents, newTeam, testEnv, registryCommits } from '../helpers/context.js';
import { event, sdkRecord, storedCount } from './fixtures.js';

const HOUR = 3_600_000;

/** count and spend of a team in events and in every rollup (dimension outcome counts each event once). */
async function rawAndRollups(teamId: string): Promise<Record<string, { n: string; spend: string; value: string; valued: string }>> {
  const events = await loadedEvents(teamId);
  const sums = "toString(sum(events)), toString(sum(spend)), toString(sumIf(value, currency = 'USD')), toString(sum(valued))";
  const rows = await events.query<{ name: string; n: string; spend: string; worth: string; counted: string }>(
    `SELECT 'events' AS name, toString(count()) AS n, toString(sum(toDecimal256(amount, 18))) AS spend,
            toString(sumIf(toDecimal256(ifNull(value, 0), 18), currency = 'USD')) AS worth, toString(countIf(value IS NOT NULL)) AS counted FROM events WHERE team_id = {t:String}
     UNION ALL SELECT 'spend_minutely', ${sums} FROM spend_minutely WHERE team_id = {t:String}
     UNION ALL SELECT 'spend_hourly_by', ${sums} FROM spend_hourly_by WHERE team_id = {t:String} AND dimension = 'outcome'
     UNION ALL SELECT 'spend_daily_by', ${sums} FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'outcome'
     UNION ALL SELECT 'spend_hourly_by asset', ${sums} FROM spend_hourly_by WHERE team_id = {t:String} AND dimension = 'asset'
     UNION ALL SELECT 'spend_daily_by asset', ${sums} FROM spend_daily_by WHERE team_id = {t:String} AND dimension = 'asset'`,
    { t: teamId },
  );
  return Object.fromEntries(rows.map((r) => [r.name, { n: r.n, spend: r.spend, value: r.worth, valued: r.counted }]));
}

/** Every table a block lands in, and the asset dimension of the by-dimension rollups. */
const ROLLED_UP = ['events', 'spend_minutely', 'spend_hourly_by', 'spend_daily_by', 'spend_hourly_by asset', 'spend_daily_by asset'];

/** Rows as the log holds them, positions from `first`. */
const logged = (rows: readonly EventRow[], first: number): BlockBody => ({ format: 'rowbinary2', bytes: Buffer.from(rowBinaryOf(rows, first)) });
/** The same as the TSV lines of a chunk written before issue 33. */
const tsvLines = (rows: readonly EventRow[], first: number): string[] => rows.map((row, i) => rowToTsv(row, first + i));

/** What the loader set aside of a team, in the shared registry. */
function rejectsOf(teamId: string) {
  return testEnv().registry.prepare('SELECT pos, team_id, id, error, format, rows, line FROM ingest_rejects WHERE team_id = ?').all(teamId) as {
    pos: number;
    team_id: string;
    id: string;
    error: string;
    format: string;
    rows: number;
    line: Buffer;
  }[];
}

/** Rows of a team as the ingest route would build them. */
function rowsFor(teamId: string, records: Record<string, unknown>[]) {
  const { schemas } = testEnv();
  return records.map((r, i) => {
    const outcome = recordToRow(r, schemas, teamId, 'events', Date.now());
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
    outcome.row.ingest_seq = Date.now() * 1000 + i;
    return outcome.row;
  });
}

describe('ingest log and loader', () => {
  describe('reads see what was acknowledged', () => {
    it('every read route answers with a record sent just before (the loader runs every 2 s here)', async () => {
      const team = await newTeam();
      const now = Date.now();
      const record = sdkRecord({ id: 'fresh-1', agent_id: 'reader', amount: '1.250000', created_at: now - 1000 });
      await api().post('/api/v1/audit/batch').set(...team.auth).send({ records: [record] }).expect(200);
      const range = `from=${new Date(now - HOUR).toISOString()}&to=${new Date(now + HOUR).toISOString()}`;
      const get = (path: string) => api().get(path).set(...team.auth).expect(200);
      const post = (path: string, body: object) => api().post(path).set(...team.auth).send(body).expect(200);
      expect((await get(`/api/v1/analytics/summary?${range}`)).body.totalSpend).to.equal('1.25');
      expect((await get(`/api/v1/analytics/timeseries?${range}&granularity=hour`)).body.map((p: { count: number }) => p.count).reduce((a: number, b: number) => a + b)).to.equal(1);
      expect((await get(`/api/v1/analytics/by-agent?${range}`)).body[0]).to.include({ key: 'reader', count: 1 });
      expect((await post('/api/v1/audit/count', {})).body).to.deep.equal({ count: 1 });
      expect((await post('/api/v1/audit/query', {})).body).to.have.length(1);
      expect((await post('/api/v1/audit/summarize', {})).body.total_transactions).to.equal(1);
      expect((await get('/api/v1/audit/fresh-1')).body).to.include({ id: 'fresh-1' });
      expect((await get('/api/v1/agents/reader')).body).to.include({ transactionCount: 1, totalSpend: '1.25' });
      expect((await get('/api/v1/team')).body.usage).to.include({ events: 1, spend: '1.25' });
    });
  });

  describe('group commit', () => {
    it('answers every request, also those arriving while a group waits for its disk flush', async function () {
      this.timeout(60_000);
      const team = await newTeam();
      // Requests spaced by 0 to 3 ms land at every moment of a commit and of its flush.
      const sent: Promise<{ status: number }>[] = [];
      await Promise.all(
        Array.from({ length: 4 }, async (_, sender) => {
          for (let i = 0; i < 100; i++) {
            sent.push(api().post('/api/v1/events').set(...team.auth).send({ events: [event({ id: `gc-${sender}-${i}` })] }).then((r) => r));
            await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
          }
        }),
      );
      const answers = await Promise.race([
        Promise.all(sent),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('a request was never answered')), 30_000)),
      ]);
      expect(answers.every((a) => a.status === 200)).to.equal(true);
      expect(await storedCount(team.teamId)).to.equal(400);
    });
  });

  describe('exactly once in ClickHouse', () => {
    it('a block inserted twice with its token is stored once in events and in every rollup', async () => {
      const team = await newTeam();
      // Positions far from the shared log's, under a log id of this test's own.
      // Valued (USDC) and not (no asset): the rollups keep both counts and the value.
      const { asset: _, ...unvalued } = event({ id: 'b2', amount: '2.25', agent_id: 'other' });
      const rows = rowsFor(team.teamId, [event({ id: 'b1', amount: '0.5', asset: 'USDC' }), unvalued]);
      const first = 9e15 + Math.floor(Math.random() * 1e9);
      const block = { firstPos: first, lastPos: first + 1 };
      const body = logged(rows, first);
      const { loaderEvents } = testEnv();
      const logId = `test-${team.teamId}`;
      await insertBlock(loaderEvents, logId, block, body);
      await insertBlock(loaderEvents, logId, block, body);
      const counts = await rawAndRollups(team.teamId);
      for (const name of ROLLED_UP) {
        expect(counts[name], name).to.deep.equal({ n: '2', spend: '2.75', value: '0.5', valued: '1' });
      }
      // A crash between the events insert and the rollups: the block again completes them, once.
      const later = { firstPos: first + 10, lastPos: first + 11 };
      const again = rowsFor(team.teamId, [event({ id: 'b3', amount: '1', asset: 'USDC' }), event({ id: 'b4', amount: '1', asset: 'USDC' })]);
      const laterBody = logged(again, later.firstPos);
      await loaderEvents.insertRowBinary('events', LOG_COLUMNS.rowbinary2, laterBody.bytes, { insert_deduplication_token: `${logId}:${later.firstPos}-${later.lastPos}:events` });
      expect((await rawAndRollups(team.teamId)).spend_minutely!.n).to.equal('2');
      await insertBlock(loaderEvents, logId, later, laterBody);
      const completed = await rawAndRollups(team.teamId);
      for (const name of ROLLED_UP) {
        expect(completed[name], name).to.deep.equal({ n: '4', spend: '4.75', value: '2.5', valued: '3' });
      }
    });

    it('a block recorded before the asset dimension loads the old way plus the asset inserts, once however often', async () => {
      const team = await newTeam();
      const rows = rowsFor(team.teamId, [event({ id: 'l1', amount: '0.5', asset: 'USDC' }), event({ id: 'l2', amount: '2.25', asset: 'EURC' })]);
      const first = 8e15 + Math.floor(Math.random() * 1e9);
      const block = { firstPos: first, lastPos: first + 1 };
      // Recorded then, so its chunks were TSV lines.
      const body: BlockBody = { format: 'tsv', bytes: Buffer.from(tsvLines(rows, first).join('')) };
      const { loaderEvents } = testEnv();
      const logId = `test-${team.teamId}`;
      for (let i = 0; i < 3; i++) await insertBlock(loaderEvents, logId, block, body, block.lastPos);
      const counts = await rawAndRollups(team.teamId);
      // TSV lines of before: no values.
      for (const name of ROLLED_UP) expect(counts[name], name).to.deep.equal({ n: '2', spend: '2.75', value: '0', valued: '0' });
    });
  });

  describe('one tenant\'s bad record', () => {
    it('ill-formed Unicode in any string field is a per-record error naming it; another team ingesting meanwhile loses nothing', async () => {
      const bad = await newTeam('bad');
      const good = await newTeam('good');
      const badRecords = [
        event({ agent_id: 'bad\ud800' }),
        event({ tags: ['ok', 'x\udc00'] }),
        event({ metadata: { note: { deep: 'a\ud83d' } } }),
        event({ metadata: { 'key\udfff': 1 } }),
        event({ id: 'fine-1' }),
      ];
      const goodBatches = Array.from({ length: 12 }, (_, b) => Array.from({ length: 10 }, (_, i) => event({ id: `g-${b}-${i}` })));
      const [badAnswer, ...goodAnswers] = await Promise.all([
        api().post('/api/v1/events').set(...bad.auth).send({ events: badRecords }),
        ...goodBatches.map((events) => api().post('/api/v1/events').set(...good.auth).send({ events })),
      ]);
      expect(badAnswer!.status).to.equal(200);
      expect(badAnswer!.body.ingested).to.equal(1);
      expect(badAnswer!.body.errors.map((e: { index: number; field: string }) => [e.index, e.field])).to.deep.equal([
        [0, 'agent_id'],
        [1, 'tags[1]'],
        [2, 'metadata.note.deep'],
        [3, 'metadata (a key)'],
      ]);
      for (const answer of goodAnswers) expect(answer.status).to.equal(200);
      expect(await storedCount(good.teamId)).to.equal(120);
      expect(await storedCount(bad.teamId)).to.equal(1);
    });

    it('a record ClickHouse refuses (in a TSV chunk of before issue 33) is set aside; the rest of its block loads and the loader goes on', async () => {
      const bad = await newTeam('refused');
      const good = await newTeam('neighbour');
      const { registry, deps } = testEnv();
      const rows = rowsFor(bad.teamId, [event({ id: 'r-ok-1' }), event({ id: 'r-bad' }), event({ id: 'r-ok-2' })]);
      const first = deps.ingest.log.endPos;
      const lines = tsvLines(rows, first);
      // What validation let through and ClickHouse cannot parse (here: a corrupt event time).
      lines[1] = lines[1]!.replace(/^([^\t]*)\t[^\t]*\t/, '$1\tnot-a-time\t');
      const setAsideBefore = (await deps.metrics.setAside.get()).values[0]?.value ?? 0;
      const chunk = registry.transaction(() => {
        deps.ingest.log.claim(bad.teamId, rows.map((r) => r.id), Date.now());
        return deps.ingest.log.append(bad.teamId, 'tsv', Buffer.from(lines.join('')), lines.length, Date.now());
      })();
      deps.ingest.freshness.committed([chunk]);
      // Another team's records, acknowledged behind it, must all arrive.
      await api().post('/api/v1/events').set(...good.auth).send({ events: [event({ id: 'n-1' }), event({ id: 'n-2' })] }).expect(200);
      expect(await storedCount(good.teamId)).to.equal(2);
      expect(await storedCount(bad.teamId)).to.equal(2);
      const rejected = rejectsOf(bad.teamId);
      expect(rejected.map((r) => [r.id, r.format, r.rows])).to.deep.equal([['r-bad', 'tsv', 1]]);
      expect(rejected[0]!.line.toString()).to.equal(lines[1]);
      expect(rejected[0]!.error).to.match(/Code: \d+/);
      expect((await deps.metrics.setAside.get()).values[0]!.value).to.equal(setAsideBefore + 1);
      expect(deps.ingest.loader.isFailing).to.equal(false);
    });

    it('a RowBinary chunk whose rows cannot be told apart (cut short) is set aside whole; the chunks beside it in its block load', async () => {
      const bad = await newTeam('damaged');
      const good = await newTeam('beside');
      const { registry, deps } = testEnv();
      const setAsideBefore = (await deps.metrics.setAside.get()).values[0]?.value ?? 0;
      const now = Date.now();
      const goodRows = (from: number) => rowsFor(good.teamId, [event({ id: `d-ok-${from}` }), event({ id: `d-ok-${from + 1}` })]);
      const badRows = rowsFor(bad.teamId, [event({ id: 'd-1' }), event({ id: 'd-2' }), event({ id: 'd-3' })]);
      let damaged = Buffer.alloc(0);
      // Three chunks committed at once, so one block takes them all: good, damaged, good.
      const chunks = registry.transaction(() => {
        const { log } = deps.ingest;
        const before = goodRows(1);
        const after = goodRows(3);
        const first = log.append(good.teamId, 'rowbinary2', logged(before, log.endPos).bytes, 2, now);
        damaged = Buffer.from(logged(badRows, log.endPos).bytes.subarray(0, -3));
        const middle = log.append(bad.teamId, 'rowbinary2', damaged, 3, now);
        return [first, middle, log.append(good.teamId, 'rowbinary2', logged(after, log.endPos).bytes, 2, now)];
      })();
      deps.ingest.freshness.committed(chunks);
      expect(await storedCount(good.teamId)).to.equal(4);
      await deps.ingest.freshness.waitFor(chunks[2]!.lastPos, 20_000);
      expect(await storedCount(bad.teamId)).to.equal(0);
      const rejected = rejectsOf(bad.teamId);
      expect(rejected.map((r) => [r.pos, r.id, r.format, r.rows])).to.deep.equal([[chunks[1]!.firstPos, '', 'rowbinary2', 3]]);
      expect(rejected[0]!.line.equals(damaged)).to.equal(true);
      expect((await deps.metrics.setAside.get()).values[0]!.value).to.equal(setAsideBefore + 3);
      expect(deps.ingest.loader.isFailing).to.equal(false);
    });
  });

  describe('chunks of earlier versions', () => {
    it('a RowBinary chunk written before values loads as it is: its records stored, unvalued, beside valued ones', async () => {
      const team = await newTeam('before-values');
      const { registry, deps, events } = testEnv();
      const rows = rowsFor(team.teamId, [event({ id: 'v1-1', amount: '2' }), event({ id: 'v1-2', amount: '3' })]);
      const chunk = registry.transaction(() => {
        deps.ingest.log.claim(team.teamId, rows.map((r) => r.id), Date.now());
        return deps.ingest.log.append(team.teamId, 'rowbinary', Buffer.from(rowBinaryOf(rows, deps.ingest.log.endPos, 'rowbinary')), rows.length, Date.now());
      })();
      deps.ingest.freshness.committed([chunk]);
      await api().post('/api/v1/events').set(...team.auth).send({ events: [event({ id: 'v2-1', amount: '5', asset: 'USDC' })] }).expect(200);
      expect(await storedCount(team.teamId)).to.equal(3);
      const stored = await events.query<{ id: string; value: string | null; currency: string }>(
        'SELECT id, toString(value) AS value, toString(currency) AS currency FROM events WHERE team_id = {team:String} ORDER BY id',
        { team: team.teamId },
      );
      expect(stored).to.deep.equal([
        { id: 'v1-1', value: null, currency: '' },
        { id: 'v1-2', value: null, currency: '' },
        { id: 'v2-1', value: '5', currency: 'USD' },
      ]);
    });
  });

  describe('ClickHouse unavailable', () => {
    it('acknowledges until the backlog bound, then 503 with Retry-After; drains by itself when ClickHouse is back', async function () {
      this.timeout(60_000);
      const team = await newTeam('outage');
      const { deps, events } = testEnv();
      // A group commit of its own with a small bound, on the shared log and loader.
      const limits = { maxRows: deps.ingest.freshness.backlog().rows + 50, maxBytes: 1024 ** 3 };
      const commit = new GroupCommit(registryCommits(deps.registry), deps.ingest.log, deps.ingest.freshness, limits, deps.logger);
      const app = appWith([], { ingest: { ...deps.ingest, commit, ingestor: new Ingestor(deps.schemas, commit) } });
      const send = (from: number) =>
        api(app).post('/api/v1/events').set(...team.auth).send({ events: Array.from({ length: 20 }, (_, i) => event({ id: `o-${from + i}`, amount: '0.1' })) });

      // A rollup's table gone: every block insert fails (a real ClickHouse error, not a data error).
      await events.command('DETACH TABLE spend_minutely');
      let attached = false;
      try {
        let acknowledged = 0;
        let refused: Awaited<ReturnType<typeof send>> | undefined;
        for (let b = 0; b < 10 && !refused; b++) {
          const res = await send(b * 20);
          if (res.status === 200) acknowledged += res.body.ingested;
          else refused = res;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(acknowledged).to.be.at.least(60);
        expect(refused, 'a 503 past the bound').to.not.equal(undefined);
        expect(refused!.status).to.equal(503);
        expect(errorOf(refused!.body).code).to.equal('store_unavailable');
        expect(refused!.headers['retry-after']).to.match(/^\d+$/);
        // The loader has tried (a reader wakes it) and reports it; health shows the backlog and its age.
        deps.ingest.freshness.wakeLoader();
        for (let i = 0; i < 50 && !deps.ingest.loader.isFailing; i++) await new Promise((r) => setTimeout(r, 100));
        const health = await api().get('/healthz').expect(200);
        expect(health.body.ingest.loader).to.equal('failing');
        expect(health.body.ingest.backlogRows).to.be.at.least(acknowledged);
        expect(health.body.ingest.oldestUnloadedAgeMs).to.be.above(0);

        await events.command('ATTACH TABLE spend_minutely');
        attached = true;
        expect(await deps.ingest.freshness.waitForTeam(team.teamId, 20_000)).to.equal(true);
        expect(deps.ingest.freshness.backlog().rows).to.equal(0);
        const counts = await rawAndRollups(team.teamId);
        expect(counts.events).to.deep.equal({ n: String(acknowledged), spend: (acknowledged / 10).toString(), value: (acknowledged / 10).toString(), valued: String(acknowledged) });
        for (const name of ['spend_minutely', 'spend_hourly_by', 'spend_daily_by']) expect(counts[name], name).to.deep.equal(counts.events);
        // And ingest is accepted again.
        expect((await send(1000)).status).to.equal(200);
      } finally {
        if (!attached) await events.command('ATTACH TABLE spend_minutely');
      }
    });
  });

  describe('GET /metrics', () => {
    it('answers the Prometheus text format, and its series move with traffic', async () => {
      const team = await newTeam();
      const scrape = async () => (await api().get('/metrics').expect(200).expect('Content-Type', /text\/plain/)).text;
      const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
      const before = await scrape();
      await api().post('/api/v1/events').set(...team.auth).send({ events: [event({ id: 'm1' }), event({ id: 'm1' }), event({ amount: '-1' })] }).expect(200);
      await storedCount(team.teamId); // waits for the loader
      const after = await scrape();
      expect(value(after, 'spendscope_ingest_records_total{outcome="accepted"}') - value(before, 'spendscope_ingest_records_total{outcome="accepted"}')).to.equal(1);
      expect(value(after, 'spendscope_ingest_records_total{outcome="duplicate"}') - value(before, 'spendscope_ingest_records_total{outcome="duplicate"}')).to.equal(1);
      expect(value(after, 'spendscope_ingest_records_total{outcome="invalid"}') - value(before, 'spendscope_ingest_records_total{outcome="invalid"}')).to.equal(1);
      expect(value(after, 'spendscope_ingest_ack_seconds_count') - value(before, 'spendscope_ingest_ack_seconds_count')).to.equal(1);
      expect(value(after, 'spendscope_http_requests_total{route="/api/v1/events",method="POST",status="200"}')).to.be.above(
        value(before, 'spendscope_http_requests_total{route="/api/v1/events",method="POST",status="200"}'),
      );
      expect(value(after, 'spendscope_loader_block_rows_count')).to.be.above(value(before, 'spendscope_loader_block_rows_count'));
      for (const series of ['spendscope_ingest_backlog_rows', 'spendscope_ingest_backlog_bytes', 'spendscope_ingest_backlog_age_seconds', 'spendscope_loader_insert_seconds_bucket', 'process_resident_memory_bytes']) {
        expect(after).to.include(series);
      }
    });
  });
});
