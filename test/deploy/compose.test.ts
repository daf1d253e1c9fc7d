import { expect } from 'chai';
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
});
