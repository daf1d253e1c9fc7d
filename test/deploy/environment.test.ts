/** Credentials given in the environment: gone from /proc/<pid>/environ once read, and still in use. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/paths.js';
import { callWithKey, startService, tempDir } from '../helpers/processes.js';

/** The environment block the kernel shows for a process, as its NAME=value entries. */
const environOf = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
const cmdlineOf = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1');

interface LogLine {
  level: number;
  pid: number;
  msg: string;
  variables?: string[];
  ancestorPid?: number;
  ancestorCommand?: string;
}
const logLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

describe('credentials in the environment', function () {
  this.timeout(60_000);
  before(function () {
    if (!fs.existsSync('/proc/self/environ')) this.skip(); // the kernel's copy of the environment is Linux's
  });

  it('are erased from /proc/<pid>/environ once read (none is in /proc/<pid>/cmdline), and the key still works', async () => {
    const key = `canary-${crypto.randomBytes(16).toString('hex')}`;
    const secretsKey = crypto.randomBytes(32).toString('base64');
    const password = `canary-${crypto.randomBytes(16).toString('hex')}`;
    const dataDir = tempDir('environ');
    const service = await startService({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, SECRETS_KEY: secretsKey, CLICKHOUSE_PASSWORD: password });
    try {
      const pid = service.child.pid!;
      const environ = environOf(pid);
      for (const secret of [key, secretsKey, password]) {
        expect(environ.join('\n')).not.to.include(secret);
        expect(cmdlineOf(pid)).not.to.include(secret);
      }
      // Overwritten where they were, not merely unlinked: the names stay, the values are gone.
      expect(environ).to.include(`BOOTSTRAP_API_KEY=${'*'.repeat(key.length)}`);
      expect(environ).to.include(`SECRETS_KEY=${'*'.repeat(secretsKey.length)}`);
      expect(environ).to.include('PORT=0');

      expect((await callWithKey(service.baseUrl, key, 'GET', '/api/v1/team')).status).to.equal(200);
      // The key of the secrets at rest came from the environment: none was generated into DATA_DIR.
      expect(fs.existsSync(path.join(dataDir, 'secrets.key'))).to.equal(false);
      const erased = logLines(service.stdout()).find((line) => line.msg.startsWith('credentials erased'));
      expect(erased?.variables, service.stdout()).to.have.members(['BOOTSTRAP_API_KEY', 'SECRETS_KEY', 'CLICKHOUSE_PASSWORD']);
    } finally {
      service.child.kill('SIGKILL');
      await service.exited;
    }
  });

  it('started by a shell that keeps them in its own environment, the service erases its copy and names the shell in a warning', async () => {
    const key = `canary-${crypto.randomBytes(16).toString('hex')}`;
    const shell = await startService({ DATA_DIR: tempDir('environ-shell'), BOOTSTRAP_API_KEY: key }, ['/bin/sh', '-c', '"$0" "$@"; exit $?']);
    // The service is the shell's child: every log line carries its pid, to stop it whatever fails.
    const servicePid = logLines(shell.stdout())[0]?.pid;
    try {
      expect(servicePid).to.be.a('number').and.not.equal(shell.child.pid);
      const warning = logLines(shell.stdout()).find((line) => line.level === 40 && line.ancestorPid !== undefined);
      expect(warning, shell.stdout()).to.include({ ancestorPid: shell.child.pid, ancestorCommand: 'sh' });
      expect(warning!.variables).to.deep.equal(['BOOTSTRAP_API_KEY']);
      expect(warning!.msg).to.include('BOOTSTRAP_API_KEY_FILE');
      expect(warning!.pid).to.equal(servicePid);
      expect(environOf(shell.child.pid!)).to.include(`BOOTSTRAP_API_KEY=${key}`);
      expect(environOf(servicePid!).join('\n')).not.to.include(key);
    } finally {
      if (servicePid) process.kill(servicePid, 'SIGKILL');
      shell.child.kill('SIGKILL');
      await shell.exited;
    }
  });

  describe('where the system does not let a write to the process memory show', () => {
    /** Runs the eraser in a process of its own started with `env`, against `memory` as its memory file. */
    const eraseIn = (env: Record<string, string>, secrets: string[], paths: string[], memory: string) => {
      const module = pathToFileURL(path.join(PROJECT_ROOT, 'dist/src/stores/process-environment.js')).href;
      const script = `import { eraseFromEnvironmentBlock } from ${JSON.stringify(module)};
        try { process.stdout.write(JSON.stringify({ erased: eraseFromEnvironmentBlock(${JSON.stringify(secrets)}, ${JSON.stringify(paths)}, ${JSON.stringify(memory)}) })); }
        catch (err) { process.stdout.write(JSON.stringify({ error: err.name, message: err.message })); }`;
      return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' })) as {
        erased?: string[];
        error?: string;
        message?: string;
      };
    };

    it('refuses a secret it could not erase, naming it and its _FILE; leaves a path to a secret file as it is', () => {
      // /dev/null takes the writes and changes nothing: what a kernel that ignores them would do.
      const refused = eraseIn({ SPENDSCOPE_TEST_SECRET: 'canary-secret', SPENDSCOPE_TEST_SECRET_FILE: '/run/x' }, ['SPENDSCOPE_TEST_SECRET'], ['SPENDSCOPE_TEST_SECRET_FILE'], '/dev/null');
      expect(refused.error).to.equal('SecretInEnvironmentError');
      expect(refused.message).to.match(/^SPENDSCOPE_TEST_SECRET: is set in the environment, which stays readable in \/proc\/<pid>\/environ, .*\(the value of SPENDSCOPE_TEST_SECRET still shows in \/proc\/self\/environ\); give SPENDSCOPE_TEST_SECRET_FILE/);
      expect(eraseIn({ SPENDSCOPE_TEST_SECRET_FILE: '/run/x' }, ['SPENDSCOPE_TEST_SECRET'], ['SPENDSCOPE_TEST_SECRET_FILE'], '/dev/null')).to.deep.equal({ erased: [] });
      // With the process's own memory file, both go.
      expect(eraseIn({ SPENDSCOPE_TEST_SECRET: 'canary-secret', SPENDSCOPE_TEST_SECRET_FILE: '/run/x' }, ['SPENDSCOPE_TEST_SECRET'], ['SPENDSCOPE_TEST_SECRET_FILE'], '/proc/self/mem')).to.deep.equal({
        erased: ['SPENDSCOPE_TEST_SECRET', 'SPENDSCOPE_TEST_SECRET_FILE'],
      });
    });
  });
});
