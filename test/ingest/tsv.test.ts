/**
 * The log's TSV lines: times as ClickHouse's DateTime64(3) text, and the plain fast path (a body
 * whose raw bytes hold no escape and no reserved key skips the per-record walk and the escaping),
 * which must give every record the same outcome and the same line as the full path.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import path from 'node:path';
import { scanShapeProblem, type ScanFacts } from '../../src/http/body-shape.js';
import { SchemaRegistry } from '../../src/http/validation.js';
import { recordToRow, type EventRow } from '../../src/ingest/records.js';
import { rowToTsv } from '../../src/ingest/tsv.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { sdkRecord } from './fixtures.js';

const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
const EVENT_TIME = 1;
const SETTLED_AT = 29;
const RECEIVED_AT = 30;

/** What ClickHouse's text form of a DateTime64(3) in UTC is, from the Date built-ins. */
const expectedText = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);

function rowAt(ms: number, settledAt: number | null = ms, receivedAt = ms): EventRow {
  const outcome = recordToRow(sdkRecord({ created_at: ms }), schemas, 'team-tsv', 'sdk', ms + 1_000);
  if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
  return { ...outcome.row, event_time: ms, settled_at: settledAt, received_at: receivedAt };
}

const fieldsOf = (line: string) => line.replace(/\n$/, '').split('\t');

describe('the ingest log TSV', () => {
  describe('times', () => {
    it('writes every time as YYYY-MM-DD hh:mm:ss.sss (UTC), whichever seconds share a cache slot and in whatever order', () => {
      const first = Date.UTC(2000, 0, 1);
      const last = Date.UTC(2299, 11, 31, 23, 59, 59, 999);
      const edges = [
        first, last, Date.UTC(2026, 10, 28, 23, 59, 59, 999), Date.UTC(2026, 10, 29), Date.UTC(2024, 1, 29, 12, 0, 0, 5),
        Date.UTC(2038, 0, 19, 3, 14, 8, 0), // past 2^31 seconds
      ];
      // Seconds 4,096 apart share a slot of the cache: each must still get its own text.
      const slotMates = [0, 4_096_000, 8_192_000, 4_096_000, 0].map((offset) => Date.UTC(2026, 10, 28, 10, 0, 0, 123) + offset);
      for (const ms of [...edges, ...slotMates]) {
        const fields = fieldsOf(rowToTsv(rowAt(ms), 1));
        expect(fields[EVENT_TIME], String(ms)).to.equal(expectedText(ms));
        expect(fields[SETTLED_AT]).to.equal(expectedText(ms));
        expect(fields[RECEIVED_AT]).to.equal(expectedText(ms));
      }
      fc.assert(
        fc.property(fc.integer({ min: first, max: last }), fc.integer({ min: -5_000, max: 5_000 }), fc.option(fc.integer({ min: first, max: last })), (ms, skew, settled) => {
          const fields = fieldsOf(rowToTsv(rowAt(ms, settled, ms + skew), 1));
          expect(fields[EVENT_TIME]).to.equal(expectedText(ms));
          expect(fields[SETTLED_AT]).to.equal(settled === null ? '\\N' : expectedText(settled));
          expect(fields[RECEIVED_AT]).to.equal(expectedText(ms + skew));
        }),
        { numRuns: 5_000 },
      );
    });
  });

  describe('a body that scans plain', () => {
    // Pieces of strings: what TSV escapes, what JSON escapes, what cannot be stored, and harmless text.
    const piece = fc.constantFrom('a', 'Zz', '0x1F', 'é', '€', '😀', ' ', '\t', '\n', '\r', '\\', '\0', '"', "'", '\ud800', '\udc00', '\u2028', '[', '{', ',');
    const text = fc.array(piece, { maxLength: 6 }).map((parts) => parts.join(''));
    const clean = fc.array(fc.constantFrom('a', 'Zz', 'é', '😀', ' ', "'", '[', ','), { minLength: 1, maxLength: 4 }).map((parts) => parts.join(''));
    // Mostly clean, so that both paths are taken often.
    const value = fc.oneof({ weight: 6, arbitrary: clean }, { weight: 1, arbitrary: text });
    const key = fc.oneof({ weight: 8, arbitrary: clean }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype') });
    const record = fc.record(
      {
        agent_id: value,
        endpoint: value.map((suffix) => `https://api.example.com/${suffix}`),
        asset: value,
        scheme: value,
        tx_hash: value,
        task_id: value,
        tags: fc.array(value, { maxLength: 3 }),
        metadataKey: key,
        metadataValue: value,
        extraKey: fc.option(key),
      },
      { requiredKeys: ['agent_id', 'endpoint', 'metadataKey', 'metadataValue'] },
    );

    it('gives each record the same outcome and the same TSV line as the full checks (generated records, escapes and reserved keys included)', () => {
      const seen = { plain: 0, notPlain: 0, refused: 0 };
      fc.assert(
        fc.property(record, ({ metadataKey, metadataValue, extraKey, ...fields }) => {
          const base = JSON.stringify({ ...sdkRecord({ id: 'tsv-1' }), ...fields });
          // Written as text: an object literal cannot hold an own __proto__ key.
          const extra = extraKey === undefined || extraKey === null ? '' : `,${JSON.stringify(extraKey)}:1`;
          const body = `{"records":[${base.slice(0, -1)},"metadata":{${JSON.stringify(metadataKey)}:${JSON.stringify(metadataValue)}}${extra}}]}`;
          const facts: ScanFacts = { plain: false };
          expect(scanShapeProblem(Buffer.from(body, 'utf8'), facts)).to.equal(undefined);
          const input = (JSON.parse(body) as { records: unknown[] }).records[0];
          const full = recordToRow(input, schemas, 'team-tsv', 'sdk', 1_795_000_000_000);
          if (!full.ok) seen.refused++;
          if (!facts.plain) {
            seen.notPlain++;
            return;
          }
          seen.plain++;
          const fast = recordToRow(input, schemas, 'team-tsv', 'sdk', 1_795_000_000_000, {}, true);
          expect(fast.ok, body).to.equal(full.ok);
          if (!fast.ok || !full.ok) {
            expect(fast).to.deep.equal(full);
            return;
          }
          expect(rowToTsv(fast.row, 7), body).to.equal(rowToTsv(full.row, 7));
        }),
        { numRuns: 3_000 },
      );
      // Both paths were taken, and records the checks refuse were among them.
      expect(seen.plain).to.be.above(300);
      expect(seen.notPlain).to.be.above(300);
      expect(seen.refused).to.be.above(100);
    });

    it('is not plain when a string holds an escape or a key is reserved, and is when neither', () => {
      const plain = (body: string) => {
        const facts: ScanFacts = { plain: false };
        expect(scanShapeProblem(Buffer.from(body, 'utf8'), facts)).to.equal(undefined);
        return facts.plain;
      };
      const cases: [string, boolean][] = [
        ['{"records":[{"agent_id":"a b","metadata":{"k":"é 😀 \' ["}}]}', true],
        ['{"records":[{"agent_id":"a\\tb"}]}', false],
        ['{"records":[{"agent_id":"\\ud800"}]}', false],
        ['{"records":[{"agent_id":"a","metadata":{"__proto__":{}}}]}', false],
        ['{"records":[{"agent_id":"a","constructor":1}]}', false],
        ['{"records":[{"agent_id":"a","prototype":1}]}', false],
        // A value may be such a word; only keys are reserved.
        ['{"records":[{"agent_id":"__proto__","tags":["prototype"]}]}', true],
      ];
      for (const [body, expected] of cases) expect(plain(body), body).to.equal(expected);
    });

    it('a row from a plain body keeps what TSV escapes out of its strings; any other row is escaped', () => {
      const outcome = recordToRow(sdkRecord({ id: 'tsv-2', agent_id: 'a\tb\\c', metadata: { note: 'x\ny' } }), schemas, 'team-tsv', 'sdk', Date.now());
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
      expect(outcome.row.plain).to.equal(false);
      const fields = fieldsOf(rowToTsv(outcome.row, 1));
      expect(fields).to.have.length(35);
      expect(fields[3]).to.equal('a\\tb\\\\c');
      expect(fields[28]).to.equal('{"note":"x\\\\ny"}');
    });
  });
});
