import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';
import { run } from '../helpers/processes.js';

/** `docker compose` (v2 plugin) or `docker-compose` (v1), whichever this machine has. */
async function composeCommand(): Promise<string[] | undefined> {
  const v2 = await run('docker', ['compose', 'version']).catch(() => undefined);
  if (v2?.code === 0) return ['docker', 'compose'];
  const v1 = await run('docker-compose', ['version']).catch(() => undefined);
  if (v1?.code === 0) return ['docker-compose'];
  return undefined;
}

describe('docker-compose.yml', function () {
  this.timeout(30_000);

  it('is valid and runs the service against the ClickHouse server, with data in volumes', async function () {
    const compose = await composeCommand();
    if (!compose) this.skip(); // no compose client on this machine: .ci/run installs one when it can
    const [command, ...args] = compose!;
    const result = await run(command!, [...args, 'config']);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.match(/CLICKHOUSE_URL: http:\/\/clickhouse:8123/);
    expect(result.stdout).to.include('clickhouse-data').and.include('spendscope-data');
    expect(result.stdout).to.match(/condition: service_healthy/);
  });

  it('has a cluster profile: PostgreSQL, the ClickHouse server, two instances on both, and haproxy checking /healthz', async function () {
    const compose = await composeCommand();
    if (!compose) this.skip();
    const [command, ...args] = compose!;
    const result = await run(command!, [...args, '--profile', 'cluster', 'config']);
    expect(result.code, result.stderr).to.equal(0);
    for (const service of ['postgres:', 'spendscope-a:', 'spendscope-b:', 'balancer:', 'clickhouse:']) expect(result.stdout).to.include(service);
    expect(result.stdout.match(/DATABASE_URL: postgres:\/\/spendscope:\S+@postgres:5432\/spendscope/g), 'instances on PostgreSQL').to.have.length(2);
    expect(result.stdout.match(/SECRETS_KEY_FILE: \/run\/secrets\/secrets_key/g), 'one secrets key for both').to.have.length(2);
    const haproxy = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/haproxy.cfg'), 'utf8');
    expect(haproxy).to.match(/option httpchk GET \/healthz/);
    expect(haproxy).to.match(/server spendscope-a spendscope-a:8080 check/).and.match(/server spendscope-b spendscope-b:8080 check/);
  });
});
