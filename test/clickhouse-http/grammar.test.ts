/**
 * The BI interface against a corpus built from its grammar (helpers/bi-corpus.ts): every kind of
 * statement it takes × every place an expression, table, setting or format stands × things a read
 * key must never reach. Every combination is refused with 497 and no answer, header or error shows
 * the canary a file holds.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startBiServer } from '../../src/clickhouse-http/interface.js';
import { forbiddenThings, grammarCorpus, type CorpusCase } from '../helpers/bi-corpus.js';
import { keyWith } from '../helpers/common.js';
import { newTeam, testEnv } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';

describe('BI statements from the grammar: every kind × every place × every forbidden thing', function () {
  this.timeout(900_000);
  const canary = `canary-${crypto.randomBytes(12).toString('hex')}`;
  let bi: Awaited<ReturnType<typeof startBiServer>>;
  let readKey: string;
  let canaryFile: string;
  let corpus: CorpusCase[];

  before(async () => {
    const { config, deps } = testEnv();
    bi = await startBiServer(deps.clickhouseHttp!, config, 0);
    const team = await newTeam('grammar');
    readKey = (await keyWith(team, { name: 'bi', scopes: ['read'], rateLimit: { requests_per_second: 10_000 } })).apiKey;
    canaryFile = path.join(tempDir('grammar-canary'), 'secret.txt');
    fs.writeFileSync(canaryFile, `${canary}\n`);
    corpus = grammarCorpus(forbiddenThings(canaryFile));
  });

  after(async () => {
    await bi?.close();
  });

  async function send(sql: string, params: Record<string, string> = {}): Promise<{ status: number; code: string | null; text: string }> {
    const url = new URL(`http://127.0.0.1:${bi.port}/`);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const res = await fetch(url, { method: 'POST', headers: { 'X-ClickHouse-User': 'mallory', 'X-ClickHouse-Key': readKey }, body: sql });
    const body = await res.text();
    return { status: res.status, code: res.headers.get('x-clickhouse-exception-code'), text: `${JSON.stringify([...res.headers])}\n${body}` };
  }

  it('is the grammar: the corpus covers every kind and place, and the engine parses every statement in it', async () => {
    expect(corpus.length).to.be.greaterThan(1_000);
    const { deps } = testEnv();
    for (const { what, sql } of corpus) {
      const parsed = await deps.events.query<{ ok: number }>('SELECT length(formatQuery({sql:String})) > 0 AS ok', { sql }).catch((err: Error) => err);
      expect(parsed, `${what}: ${sql}`).not.to.be.instanceOf(Error);
    }
  });

  it('a canary in an answer is seen: the check below can fail', async () => {
    const answer = await send(`SELECT '${canary}' AS shown`);
    expect(answer.status).to.equal(200);
    expect(answer.text).to.include(canary);
  });

  it('refuses every combination with 497, the canary in no answer, header or error', async () => {
    const wrong: string[] = [];
    for (const { what, sql, params } of corpus) {
      const answer = await send(sql, params);
      if (answer.text.includes(canary)) wrong.push(`${what}: showed the canary: ${sql}`);
      else if (answer.code !== '497') wrong.push(`${what}: answered ${answer.status} (${answer.code}) ${answer.text.split('\n')[1]?.slice(0, 200)}: ${sql}`);
    }
    expect(wrong, wrong.slice(0, 20).join('\n')).to.deep.equal([]);
  });
});
