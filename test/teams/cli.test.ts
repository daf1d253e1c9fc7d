/** `npm run team:create`, run as a separate process while the service (the shared test app) runs. */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { listOperatorActions } from '../../src/operator/repository.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { bearer } from '../helpers/common.js';
import { api, newTeam, testEnv } from '../helpers/context.js';
import { run, tempDir } from '../helpers/processes.js';

const CLI = path.join(PROJECT_ROOT, 'dist/scripts/team-create.js');

describe('team:create CLI', function () {
  this.timeout(60_000);

  it('creates a team whose key works at once in the running service and sees only itself', async () => {
    const other = await newTeam('other');
    const name = `cli-${Date.now()}`;
    const result = await run(process.execPath, [CLI, '--name', name], { DATA_DIR: testEnv().dataDir });
    expect(result.code, result.stderr).to.equal(0);
    const created = JSON.parse(result.stdout) as { id: string; name: string; apiKey: string };
    expect(created).to.have.keys('id', 'name', 'apiKey');
    expect(created.name).to.equal(name);

    const res = await api().get('/api/v1/team').set(...bearer(created.apiKey)).expect(200);
    expect(res.body.id).to.equal(created.id);
    expect(res.body.id).not.to.equal(other.teamId);
    // In the operator audit log, as made by the CLI.
    const logged = await listOperatorActions(testEnv().deps.db, { limit: 5, teamId: created.id });
    expect(logged.map((a) => [a.actor, a.action])).to.deep.equal([['team_create_cli', 'team.create']]);
    expect(logged[0]!.changes.name).to.deep.equal({ before: null, after: name });
  });

  it('works exactly as docs/api.md writes it: npm run team:create -- --name <name>', async () => {
    const name = `npm-${Date.now()}`;
    const result = await run('npm', ['run', 'team:create', '--', '--name', name], { DATA_DIR: testEnv().dataDir });
    expect(result.code, result.stderr).to.equal(0);
    // npm prints its own banner first; the JSON is the last line of stdout.
    const last = result.stdout.trim().split('\n').pop()!;
    const created = JSON.parse(last) as { name: string; apiKey: string };
    expect(created.name).to.equal(name);
    await api().get('/v1/team').set(...bearer(created.apiKey)).expect(200);
  });

  it('refuses a taken name (exit 1) and a missing name (exit 2)', async () => {
    const team = await newTeam('taken');
    const taken = await run(process.execPath, [CLI, '--name', team.name], { DATA_DIR: testEnv().dataDir });
    expect(taken.code).to.equal(1);
    expect(taken.stderr).to.include('already exists');
    expect(taken.stdout).to.equal('');
    const missing = await run(process.execPath, [CLI], { DATA_DIR: testEnv().dataDir });
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.include('usage');
  });

  it('says which DATA_DIR it used', async () => {
    const result = await run(process.execPath, [CLI, '--name', `dir-${Date.now()}`], { DATA_DIR: testEnv().dataDir });
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stderr).to.include(`DATA_DIR=${testEnv().dataDir}`);
  });

  it('refuses a DATA_DIR where no server has run, unless --init, and then creates the registry there', async () => {
    const dir = tempDir('cli-init');
    try {
      const refused = await run(process.execPath, [CLI, '--name', 'acme'], { DATA_DIR: dir });
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.include(dir).and.include('--init');
      expect(refused.stdout).to.equal('');
      expect(fs.existsSync(path.join(dir, 'registry.db')), 'nothing created').to.equal(false);
      const created = await run(process.execPath, [CLI, '--name', 'acme', '--init'], { DATA_DIR: dir });
      expect(created.code, created.stderr).to.equal(0);
      expect(created.stderr).to.include(`DATA_DIR=${dir}`);
      expect(JSON.parse(created.stdout)).to.include({ name: 'acme' });
      expect(fs.existsSync(path.join(dir, 'registry.db'))).to.equal(true);
      // Now there is a registry: no --init needed.
      const second = await run(process.execPath, [CLI, '--name', 'other'], { DATA_DIR: dir });
      expect(second.code, second.stderr).to.equal(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
