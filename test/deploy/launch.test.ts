import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';
import { SERVICE_NODE_OPTIONS } from '../../scripts/service.js';

/**
 * The threads of a Node process that waits a moment, started with `nodeOptions` as NODE_OPTIONS:
 * Node refuses to start with a flag NODE_OPTIONS may not carry, so this also checks the flag is one.
 */
async function threadsOfNode(nodeOptions: string | undefined): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("up"); setTimeout(() => undefined, 5000)'], {
    env: { PATH: process.env.PATH ?? '', ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`node exited with ${code}: ${stderr}`)));
    });
    return fs.readdirSync(`/proc/${child.pid}/task`).length;
  } finally {
    child.kill();
  }
}

describe('how the service is started', function () {
  this.timeout(30_000);

  it('npm start, the Docker image and the benchmarks give V8 the same pool of one thread', function () {
    const start = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
    const dockerfile = fs.readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    expect(SERVICE_NODE_OPTIONS).to.equal('--v8-pool-size=1');
    // The environment's NODE_OPTIONS, when set, replaces the default in all three.
    expect(start).to.include(`NODE_OPTIONS=\${NODE_OPTIONS:-${SERVICE_NODE_OPTIONS}} node dist/src/main.js`);
    expect(dockerfile).to.match(new RegExp(`^ENV NODE_OPTIONS=${SERVICE_NODE_OPTIONS}$`, 'm'));
  });

  it('that NODE_OPTIONS starts Node, with three V8 threads fewer than its default of four', async function () {
    if (!fs.existsSync('/proc/self/task')) this.skip(); // threads are counted from Linux's /proc
    const byDefault = await threadsOfNode(undefined);
    const withOne = await threadsOfNode(SERVICE_NODE_OPTIONS);
    expect(byDefault - withOne).to.equal(3);
  });
});
