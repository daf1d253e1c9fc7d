/**
 * The body shape limits (nesting depth, array items) are checked by a scan of the raw bytes before
 * JSON.parse: a body of deep nesting is refused for the cost of reading it, not of parsing it.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_ARRAY_ITEMS, MAX_BODY_DEPTH, scanShapeProblem, shapeProblem } from '../../src/http/body-shape.js';
import type { Team } from '../helpers/common.js';
import { api, errorOf, newTeam, describeOnEachRegistry } from '../helpers/context.js';

const EIGHT_MB = 8_000_000;

/** The path of a key below `path`, as error messages write it (an independent copy of the rule). */
const keyPath = (path: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`);

/** Every container exactly MAX_BODY_DEPTH levels down, in document order: where a scan may stop. */
function tooDeepPaths(value: unknown, path = '', depth = 0, found: string[] = []): string[] {
  if (value === null || typeof value !== 'object') return found;
  if (depth >= MAX_BODY_DEPTH) {
    found.push(path || 'body');
    return found;
  }
  if (Array.isArray(value)) value.forEach((item, i) => tooDeepPaths(item, `${path}[${i}]`, depth + 1, found));
  else for (const [key, item] of Object.entries(value)) tooDeepPaths(item, keyPath(path, key), depth + 1, found);
  return found;
}

/** Strings and keys that look like structure to a scanner that does not track strings. */
const trickyText = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\"', '"]', '[{"a":', '{"', ',', ',,,', ':', '\\\\"[', '\u2028', '💸', 'Ω[', '\u0000', '\\u005b', ''),
);

const leaf = fc.oneof(trickyText, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));

/** Small random JSON values, wrapped in a chain of arrays and objects that ends near the depth limit. */
const nearTheLimit: fc.Arbitrary<unknown> = fc
  .tuple(
    fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
      value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, leaf, tie('array'), tie('object')),
      array: fc.array(tie('value'), { maxLength: 3 }),
      object: fc.dictionary(trickyText, tie('value'), { maxKeys: 3 }),
    })).value,
    fc.array(fc.tuple(fc.boolean(), trickyText, fc.array(leaf, { maxLength: 2 }), fc.array(leaf, { maxLength: 2 })), { minLength: MAX_BODY_DEPTH - 6, maxLength: MAX_BODY_DEPTH + 2 }),
  )
  .map(([inner, levels]) =>
    levels.reduce<unknown>((value, [asArray, key, before, after]) => {
      if (asArray) return [...before, value, ...after];
      const object: Record<string, unknown> = {};
      before.forEach((v, i) => (object[`b${i}${key}`] = v));
      object[key] = value;
      after.forEach((v, i) => (object[`a${i}${key}`] = v));
      return object;
    }, inner),
  );

describeOnEachRegistry('body shape limits, checked before JSON.parse', function () {
  this.timeout(60_000);
  let team: Team;
  before(async () => {
    team = await newTeam();
  });

  // A Buffer is sent as it is (superagent would otherwise serialize it as JSON for a JSON type).
  const post = (body: string | Buffer, type = 'application/json') =>
    api().post('/api/v1/audit/query').set(...team.auth).set('Content-Type', type).serialize((b: string) => b).send(body);

  describe('the scan agrees with the check on parsed bodies', () => {
    it('on generated JSON near the depth limit, with strings full of brackets, quotes and escapes, it refuses exactly what shapeProblem refuses, naming the first place', () => {
      const verdicts = { refused: 0, taken: 0 };
      fc.assert(
        fc.property(nearTheLimit, fc.boolean(), (value, spaced) => {
          const text = JSON.stringify(value, null, spaced ? 1 : undefined);
          const parsed: unknown = JSON.parse(text);
          const scanned = scanShapeProblem(Buffer.from(text, 'utf8'));
          const walked = shapeProblem(parsed, () => false);
          expect(scanned === undefined, text).to.equal(walked === undefined);
          verdicts[scanned ? 'refused' : 'taken']++;
          if (scanned) {
            expect(scanned.message).to.equal(`nests deeper than ${MAX_BODY_DEPTH} levels`);
            expect(scanned.field).to.equal(tooDeepPaths(parsed)[0]);
          }
        }),
        { numRuns: 2_000 },
      );
      // Both sides of the limit were tried, not one of them 2,000 times.
      expect(verdicts.refused).to.be.above(200);
      expect(verdicts.taken).to.be.above(200);
    });

    it(`counts array items, not commas inside strings: ${MAX_ARRAY_ITEMS.toLocaleString('en-US')} items pass, one more is refused where it is`, () => {
      const items = (n: number) => `[${Array.from({ length: n }, () => '",]["').join(',')}]`;
      expect(scanShapeProblem(Buffer.from(`{"a":{"x y":[1,${items(MAX_ARRAY_ITEMS)}]}}`))).to.equal(undefined);
      expect(scanShapeProblem(Buffer.from(`{"a":{"x y":[1,${items(MAX_ARRAY_ITEMS + 1)}]}}`))).to.deep.equal({
        field: 'a["x y"][1]',
        message: `has more than ${MAX_ARRAY_ITEMS} items`,
      });
    });

    it('leaves malformed text to JSON.parse: a bracket that closes nothing, an unterminated string', () => {
      expect(scanShapeProblem(Buffer.from(']' + '['.repeat(100)))).to.equal(undefined);
      expect(scanShapeProblem(Buffer.from('{"a":[}' + '['.repeat(100)))).to.equal(undefined);
      expect(scanShapeProblem(Buffer.from('{"a' + '['.repeat(100)))).to.equal(undefined);
    });

    it('names the body when a key on the path is not a JSON string', () => {
      const deep = '{"a":' + '['.repeat(40);
      expect(scanShapeProblem(Buffer.from(deep))!.field).to.equal(`a${'[0]'.repeat(MAX_BODY_DEPTH - 1)}`);
      expect(scanShapeProblem(Buffer.from('{"\\x":' + '['.repeat(40)))!.field).to.equal('body');
    });
  });

  describe('through a route', () => {
    const deepBodies = [
      ['8 MB of "[" in a field, never closed', `{"q":${'['.repeat(EIGHT_MB)}`, `q${'[0]'.repeat(MAX_BODY_DEPTH - 1)}`],
      ['8 MB of "[" then "]"', '['.repeat(EIGHT_MB / 2) + ']'.repeat(EIGHT_MB / 2), '[0]'.repeat(MAX_BODY_DEPTH)],
      ['8 MB of \'{"a":\'', '{"a":'.repeat(EIGHT_MB / 5), Array.from({ length: MAX_BODY_DEPTH }, () => 'a').join('.')],
    ] as const;
    for (const [label, body, field] of deepBodies) {
      // Unclosed bodies are refused for their depth, not as bad JSON: the scan ran before JSON.parse.
      // What it costs is measured by `npm run bench:body-shape`.
      it(`${label} is a 400 naming the field`, async () => {
        const res = await post(body);
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        const error = errorOf(res.body);
        expect(error.code).to.equal('validation_failed');
        expect(error.message).to.equal(`Request body is invalid: ${field} nests deeper than ${MAX_BODY_DEPTH} levels`);
        expect(error.details).to.deep.equal([{ field, message: `nests deeper than ${MAX_BODY_DEPTH} levels` }]);
      });
    }

    it('a lone surrogate in any string of a body (an escape JSON allows, no store can keep) is a 400 naming its field', async () => {
      const authorization = await api()
        .post('/api/v1/authorizations')
        .set(...team.auth)
        .set('Content-Type', 'application/json')
        .send('{"agent_id":"\\ud83d","endpoint":"https://api.example.com/v1/search","amount":"0.25"}');
      expect(authorization.status, JSON.stringify(authorization.body)).to.equal(400);
      expect(errorOf(authorization.body).details).to.deep.equal([{ field: 'agent_id', message: 'is not well-formed Unicode (a lone UTF-16 surrogate such as \\ud800)' }]);
      const policy = await api()
        .post('/api/v1/policies')
        .set(...team.auth)
        .set('Content-Type', 'application/json')
        .send('{"name":"p","limits":[{"kind":"daily","amount":"1"}],"agents":["a","\\udc00b"]}');
      expect(policy.status, JSON.stringify(policy.body)).to.equal(400);
      expect(errorOf(policy.body).details).to.deep.equal([{ field: 'agents[1]', message: 'is not well-formed Unicode (a lone UTF-16 surrogate such as \\ud800)' }]);
    });

    it('a UTF-16 body is scanned too; UTF-32 (which a byte scan cannot read) is a 415', async () => {
      const text = `{"q":${'['.repeat(EIGHT_MB / 4)}`;
      const deep = Buffer.from(`\ufeff${text}`, 'utf16le');
      const res = await post(deep, 'application/json; charset=utf-16');
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(errorOf(res.body).details).to.deep.equal([{ field: `q${'[0]'.repeat(MAX_BODY_DEPTH - 1)}`, message: `nests deeper than ${MAX_BODY_DEPTH} levels` }]);
      await post(Buffer.from('{"limit":1}', 'utf16le'), 'application/json; charset=utf-16le').expect(200);
      const utf32 = await post(Buffer.from([0x7b, 0, 0, 0, 0x7d, 0, 0, 0]), 'application/json; charset=utf-32le').expect(415);
      expect(errorOf(utf32.body).code).to.equal('unsupported_media_type');
    });

    it('a large body within the limits (6 MB, 30 levels deep, strings of brackets and escaped quotes) is taken whole', async () => {
      const chain = (depth: number): unknown => (depth === 0 ? 'end' : depth % 2 ? { 'k[{': chain(depth - 1) } : [chain(depth - 1)]);
      // Levels: body, records, the record, metadata, then 28 of the chain (its leaf is a string).
      const metadata = { deep: chain(MAX_BODY_DEPTH - 4), text: '[{"\\'.repeat(900) + '",]}{'.repeat(250) };
      const records = Array.from({ length: 1_000 }, (_, i) => ({
        id: `large-${process.pid}-${i}`,
        agent_id: 'large-body',
        endpoint: 'https://x.example/p',
        method: 'GET',
        amount: '0.01',
        metadata,
      }));
      const body = JSON.stringify({ records });
      expect(body.length).to.be.above(6_000_000);
      const res = await api().post('/api/v1/audit/batch').set(...team.auth).type('json').send(body).expect(200);
      expect(res.body.ingested).to.equal(1_000);
      const back = await api().post('/api/v1/audit/query').set(...team.auth).send({ agentId: 'large-body', limit: 1 }).expect(200);
      expect(back.body[0].metadata).to.deep.equal(metadata);
    });
  });
});
