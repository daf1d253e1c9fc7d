/**
 * The ingest log's claims, the same rules on the SQLite log and on PostgreSQL's (src/ingest/shared-log.ts),
 * and what only several instances on PostgreSQL can do: claim one id at once, either side of midnight.
 */
import { expect } from 'chai';
import { contentPrint, IngestLog, type ClaimOutcome, type ContentPrint } from '../../src/ingest/log.js';
import { recordToRow, type EventRow } from '../../src/ingest/records.js';
import { rowBinaryBoundaries } from '../../src/ingest/rowbinary.js';
import { claimDay, OVERLAP_MS, SharedIngestLog } from '../../src/ingest/shared-log.js';
import type { Database } from '../../src/stores/sql.js';
import type { Registry } from '../../src/stores/sqlite.js';
import { testEnv } from '../helpers/context.js';
import { forEachDialect } from '../helpers/dialects.js';

const DAY = 86_400_000;
const NOON = Date.UTC(2026, 10, 24, 12);
const WINDOW_DAYS = 7;

const print = (amount: string, txHash: string | null = null): ContentPrint =>
  contentPrint({ agent_id: 'bot', endpoint: 'https://api.example.com/x', amount, amount_raw: '0', asset: 'USDC', network: 'base', payee_address: '0xabc', tx_hash: txHash });

type Claim = (teamId: string, ids: string[], now: number, prints?: ContentPrint[]) => Promise<ClaimOutcome[]>;

/** Claims in a transaction of their own, on either log. */
async function claimer(db: Database, shared: boolean, now = NOON): Promise<Claim> {
  if (!shared) {
    const registry = db.origin as Registry;
    const log = new IngestLog(registry, WINDOW_DAYS);
    return async (teamId, ids, at, prints) => registry.transaction(() => log.claim(teamId, ids, at, prints))();
  }
  const log = new SharedIngestLog(WINDOW_DAYS);
  await log.rollPartitions(db, now);
  return (teamId, ids, at, prints) => db.transaction((sql) => log.claim(sql, teamId, ids, at, prints));
}

describe('ingest claims, on SQLite and PostgreSQL', function () {
  this.timeout(120_000);
  forEachDialect('claims', (open, dialect) => {
    const shared = dialect === 'postgres';

    it('claims each id once per team (a repeat in one batch: its first row), remembers it for the window, and forgets it after', async () => {
      const { db } = await open();
      const claim = await claimer(db, shared);
      expect(await claim('team_a', ['a', 'b', 'a', 'srv_1'], NOON)).to.deep.equal([true, true, false, true]);
      expect(await claim('team_a', ['a', 'c'], NOON + 1)).to.deep.equal([false, true]);
      expect(await claim('team_b', ['a'], NOON)).to.deep.equal([true]);
      // Days later, within the window: still known. (PostgreSQL needs each day's partition: rolled as the service does.)
      const later = NOON + 3 * DAY;
      if (shared) await new SharedIngestLog(WINDOW_DAYS).rollPartitions(db, later);
      expect(await claim('team_a', ['a', 'd'], later)).to.deep.equal([false, true]);
      const past = NOON + (WINDOW_DAYS + 1) * DAY;
      if (shared) await new SharedIngestLog(WINDOW_DAYS).rollPartitions(db, past);
      expect(await claim('team_a', ['b', 'd'], past)).to.deep.equal([true, false]);
    });

    it('judges a known id by its print: the same content a duplicate, other content a conflict naming the field, another tx_hash another payment under a derived id', async () => {
      const { db } = await open();
      const claim = await claimer(db, shared);
      expect(await claim('team_a', ['p1', 'p2', 'p3'], NOON, [print('1.5'), print('2', '0xAA'), print('3')])).to.deep.equal([true, true, true]);
      const again = await claim('team_a', ['p1', 'p3', 'p2', 'p2'], NOON + 1, [print('1.500'), print('4'), print('2', '0xaa'), print('2', '0xbb')]);
      expect(again.slice(0, 3)).to.deep.equal([false, { conflict: ['amount'] }, false]);
      expect(again[3]).to.have.property('storedAs').that.matches(/^p2~tx~[0-9a-f]{16}$/);
      // The same second payment sent again is a duplicate of its derived id.
      expect(await claim('team_a', ['p2'], NOON + 2, [print('2', '0xbb')])).to.deep.equal([false]);
    });

    // What only several instances on one store can do.
    if (!shared) return;

    it('one batch sent to three instances at once, in different orders, is claimed once: every id new on exactly one, and no deadlock', async () => {
      const { db, another } = await open();
      const instances = [db, another(), another()];
      const log = new SharedIngestLog(WINDOW_DAYS);
      await log.rollPartitions(db, NOON);
      await Promise.all(instances.map((i) => i.get('SELECT 1'))); // connected, so the three start together
      for (let round = 0; round < 5; round++) {
        const batch = Array.from({ length: 200 }, (_, i) => `id-${i}-${round}`);
        const orders = [batch, [...batch].reverse(), [...batch].sort(() => Math.random() - 0.5)];
        // Each holds its transaction a while after claiming, as a group commit does while it appends and evaluates.
        const outcomes = await Promise.all(
          instances.map((i, n) =>
            i.transaction(async (sql) => {
              const claimed = await log.claim(sql, 'team_a', orders[n]!, NOON + round);
              await new Promise((resolve) => setTimeout(resolve, 50));
              return claimed;
            }),
          ),
        );
        const newOn = new Map<string, number>();
        outcomes.forEach((list, n) => list.forEach((o, k) => o === true && newOn.set(orders[n]![k]!, (newOn.get(orders[n]![k]!) ?? 0) + 1)));
        expect(newOn.size, `round ${round}`).to.equal(batch.length);
        expect([...newOn.values()].every((n) => n === 1), `round ${round}`).to.equal(true);
      }
    });

    it('two claims of one id either side of midnight, at once, meet: one is new, the other a duplicate', async () => {
      const { db, another } = await open();
      const midnight = Date.UTC(2026, 10, 25);
      expect(claimDay(midnight - 1)).to.not.equal(claimDay(midnight));
      const cases: [number, number][] = [[midnight - 1, midnight], [midnight - 60_000, midnight + OVERLAP_MS - 1]];
      for (const [k, [before, after]] of cases.entries()) {
        const [first, second] = await Promise.all([claimer(db, true, midnight - DAY), claimer(another(), true, midnight)]);
        const outcomes = await Promise.all([first('team_a', [`late-${k}`], before), second('team_a', [`late-${k}`], after)]);
        expect(outcomes.flat().filter((o) => o === true), `case ${k}`).to.have.length(1);
      }
      // After the overlap, a day's claims go into that day alone; earlier ones are found in the day before.
      const claim = await claimer(db, true, midnight);
      expect(await claim('team_a', ['late-0', 'fresh'], midnight + OVERLAP_MS + 1)).to.deep.equal([false, true]);
    });

    it('appends chunks of at most 65,536 rows, each row at its own position, in the caller transaction', async () => {
      const { db } = await open();
      const log = new SharedIngestLog(WINDOW_DAYS);
      const made = recordToRow({ agent_id: 'bot', endpoint: 'https://api.example.com/x', method: 'GET', amount: '0.5' }, testEnv().schemas, 'team_a', 'events', NOON);
      if (!made.ok) throw new Error(JSON.stringify(made.errors));
      const rows: EventRow[] = Array.from({ length: 65_540 }, (_, i) => ({ ...made.row, id: `r${i}` }));
      const chunks = await db.transaction((sql) => log.append(sql, 'team_a', rows, NOON));
      expect(chunks.map((c) => [c.rows, c.format])).to.deep.equal([[65_536, 'rowbinary2'], [4, 'rowbinary2']]);
      const stored = await db.all<{ first_pos: number; last_pos: number; format: string; body: Buffer }>('SELECT first_pos, last_pos, format, body FROM ingest_chunks ORDER BY first_pos');
      expect(stored.map((c) => [Number(c.first_pos), Number(c.last_pos), c.format])).to.deep.equal(chunks.map((c) => [c.firstPos, c.lastPos, 'rowbinary2']));
      // Each row as RowBinary with its position (log_pos).
      const read = stored.flatMap((c) => {
        const { ids, positions } = rowBinaryBoundaries(c.body, 'rowbinary2');
        return ids.map((id, i) => [id, positions[i]!] as const);
      });
      expect(read).to.have.length(65_540);
      expect(read.map(([id]) => id)).to.deep.equal(rows.map((r) => r.id));
      expect(new Set(read.map(([, pos]) => pos)).size).to.equal(65_540);
      expect(read[65_537]).to.deep.equal(['r65537', chunks[1]!.firstPos + 1]);
      await db.transaction(async (sql) => {
        await log.append(sql, 'team_a', rows.slice(0, 1), NOON);
        throw new Error('rolled back');
      }).catch(() => undefined);
      expect(await db.all('SELECT first_pos FROM ingest_chunks')).to.have.length(2);
    });
  });
});
