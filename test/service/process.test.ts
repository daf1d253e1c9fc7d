/** The built service as a user runs it: start-up, bootstrap, bad config, signals. */
import { expect } from 'chai';
import Database from 'better-sqlite3';
import path from 'node:path';
import { startService, tempDir, MAIN, run } from '../helpers/processes.js';

describe('the service process', function () {
  this.timeout(60_000);

  it('on first start creates team "default", prints its key once with a curl example, and the key works', async () => {
    const dataDir = tempDir('first-start');
    const first = await startService({ DATA_DIR: dataDir });
    try {
      const key = /^ {2}(ss_[A-Za-z0-9_-]+)$/m.exec(first.stdout())?.[1];
      expect(key, first.stdout()).to.be.a('string');
      expect(first.stdout()).to.match(/curl -H "Authorization: Bearer ss_[^"]+" http:\/\/127\.0\.0\.1:\d+\/api\/v1\/team/);
      const res = await fetch(`${first.baseUrl}/api/v1/team`, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { name: string }).name).to.equal('default');
      first.child.kill('SIGTERM');
      expect(await first.exited).to.equal(0);

      // The second start creates nothing and prints no key; the first key still works.
      const second = await startService({ DATA_DIR: dataDir });
      try {
        expect(second.stdout()).not.to.include('Created team');
        const again = await fetch(`${second.baseUrl}/v1/team`, { headers: { Authorization: `Bearer ${key}` } });
        expect(again.status).to.equal(200);
      } finally {
        second.child.kill('SIGINT');
        expect(await second.exited).to.equal(0);
      }
    } finally {
      first.child.kill('SIGKILL');
    }
  });

  it('LOG_FORMAT=pretty prints readable lines and sets the key banner apart; piped output stays JSON by default', async () => {
    const pretty = await startService({ DATA_DIR: tempDir('pretty-log'), LOG_FORMAT: 'pretty' });
    try {
      const key = /^ {2}(ss_[A-Za-z0-9_-]+)$/m.exec(pretty.stdout())?.[1];
      expect((await fetch(`${pretty.baseUrl}/api/v1/team`, { headers: { Authorization: `Bearer ${key}` } })).status).to.equal(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const out = pretty.stdout();
      // The banner: a rule, the lines, a rule, each rule on a line of its own with a blank line around.
      expect(out).to.match(/\n\n─{40,}\nCreated team "default" \(team_[^)]+\)\. Its API key, shown only this once:\n {2}ss_\S+\nTry it: curl [^\n]+\n─{40,}\n\n/);
      expect(out).to.match(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}spendscope listening on http:\/\/127\.0\.0\.1:\d+ {2}host=127\.0\.0\.1 port=\d+/m);
      expect(out).to.match(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}GET \/api\/v1\/team 200 \d+ms {2}requestId=\S+ teamId=team_\S+$/m);
      for (const line of out.split('\n')) expect(line.startsWith('{'), line).to.equal(false);
    } finally {
      pretty.child.kill('SIGKILL');
    }
    const piped = await startService({ DATA_DIR: tempDir('json-log') });
    try {
      const lines = piped.stdout().split('\n').filter((l) => l.startsWith('{'));
      // Not necessarily the last line: the loader's start-up work may log after it.
      const listening = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).find((l) => l.msg.startsWith('spendscope listening'));
      expect(listening).to.include({ level: 30, msg: `spendscope listening on http://127.0.0.1:${new URL(piped.baseUrl).port}` });
    } finally {
      piped.child.kill('SIGKILL');
    }
    const bad = await run(process.execPath, [MAIN], { PATH: process.env.PATH ?? '', DATA_DIR: tempDir('bad-log'), LOG_FORMAT: 'yaml' });
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.include('LOG_FORMAT').and.include('json, pretty, auto');
  });

  it('uses BOOTSTRAP_API_KEY for team "default" without printing it', async () => {
    const key = 'bootstrap-key-for-tests-0123456789';
    const service = await startService({ DATA_DIR: tempDir('bootstrap'), BOOTSTRAP_API_KEY: key });
    try {
      expect(service.stdout()).to.include('BOOTSTRAP_API_KEY');
      expect(service.stdout()).not.to.include(key);
      const res = await fetch(`${service.baseUrl}/api/v1/team`, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).to.equal(200);
      const unauth = await fetch(`${service.baseUrl}/api/v1/team`);
      expect(unauth.status).to.equal(401);
      expect(((await unauth.json()) as { error: { code: string } }).error.code).to.equal('unauthorized');
    } finally {
      service.child.kill('SIGTERM');
      expect(await service.exited).to.equal(0);
    }
  });

  it('refuses to start on a bad variable, naming it', async () => {
    const result = await run(process.execPath, [MAIN], { DATA_DIR: tempDir('bad-config'), PORT: 'eighty', MAX_BODY_BYTES: 'lots' });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('PORT').and.include('MAX_BODY_BYTES');
  });

  it('refuses to start when an applied migration was edited, saying which', async () => {
    const dataDir = tempDir('tampered');
    const service = await startService({ DATA_DIR: dataDir });
    service.child.kill('SIGTERM');
    await service.exited;
    const db = new Database(path.join(dataDir, 'registry.db'));
    db.prepare("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1").run();
    db.close();
    const result = await run(process.execPath, [MAIN], { DATA_DIR: dataDir, PORT: '0' });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('001_teams_and_keys.sql').and.include('changed after it was applied');
  });

  it('refuses a second server on the same data directory with a clear message', async () => {
    const dataDir = tempDir('locked');
    const first = await startService({ DATA_DIR: dataDir });
    try {
      const second = await run(process.execPath, [MAIN], { DATA_DIR: dataDir, PORT: '0' });
      expect(second.code).to.equal(1);
      expect(second.stderr).to.include('another process may be using it');
    } finally {
      first.child.kill('SIGTERM');
      expect(await first.exited).to.equal(0);
    }
  });

  it('on SIGTERM stops, closes both stores and exits 0, so the data directory can be opened again', async () => {
    const dataDir = tempDir('sigterm');
    const service = await startService({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: 'sigterm-test-key-0123456789' });
    service.child.kill('SIGTERM');
    expect(await service.exited).to.equal(0);
    expect(service.stdout()).to.include('stores closed');
    const again = await startService({ DATA_DIR: dataDir });
    try {
      const res = await fetch(`${again.baseUrl}/healthz`);
      expect(res.status).to.equal(200);
    } finally {
      again.child.kill('SIGTERM');
      expect(await again.exited).to.equal(0);
    }
  });
});
