/** Webhook URLs and signing secrets sealed in the registry: nowhere in clear on disk, re-sealed at start, rotated, tamper-evident. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { GENERATED_KEY_FILE, openSecretBox, SealedValueError, SecretBox, SecretsKeyError, type SecretsKey, type SecretsKeys } from '../../src/stores/secrets.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { createTeam } from '../../src/teams/repository.js';
import { Dispatcher } from '../../src/webhooks/dispatcher.js';
import { createEndpoint, findEndpoint, resealEndpointSecrets } from '../../src/webhooks/repository.js';
import { signatures } from '../../src/webhooks/sender.js';
import { api, newTeam, testEnv } from '../helpers/context.js';
import { MAIN, run, tempDir } from '../helpers/processes.js';
import { registryBytes } from '../helpers/registry-bytes.js';
import { queueTestEvent } from './parked.js';
import { Receiver } from './receiver.js';
import { sqliteDatabase } from '../../src/stores/sql.js';

const newKey = (source = 'SECRETS_KEY'): SecretsKey => ({ bytes: crypto.randomBytes(32), source });

/** Every form a secret could be found in: the text, its base64 body, the 32 bytes that sign. */
function assertNowhere(bytes: Buffer, secrets: string[], where: string): void {
  for (const secret of secrets) {
    const forms = [Buffer.from(secret)];
    if (secret.startsWith('whsec_')) forms.push(Buffer.from(secret.slice(6)), Buffer.from(secret.slice(6), 'base64'));
    for (const form of forms) expect(bytes.indexOf(form), `${secret} (${form.length} bytes) found in ${where}`).to.equal(-1);
  }
}

/** A registry of its own (a second "installation"), migrated, with one team. */
async function ownRegistry(label: string): Promise<{ db: Registry; dataDir: string; teamId: string }> {
  const dataDir = tempDir(label);
  const db = openRegistry(dataDir);
  migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
  const { team } = await createTeam(sqliteDatabase(db), 'default');
  return { db, dataDir, teamId: team.id };
}

/** `opening` fails as a sealed value that does not open fails. */
async function expectSealedValueError(opening: Promise<unknown>): Promise<void> {
  let error: unknown;
  await opening.catch((err) => (error = err));
  expect(error).to.be.instanceOf(SealedValueError);
  expect((error as Error).message).to.match(/integrity/);
}

const input = (url: string, format: 'standard' | 'slack' = 'standard') => ({ url, description: null, events: ['test' as const], format, active: false });

describe('webhook secrets at rest', function () {
  this.timeout(60_000);

  it('a secret, its previous one and a slack URL are nowhere in clear in the registry, its -wal or -shm, before and after a checkpoint', async () => {
    const env = testEnv();
    const team = await newTeam();
    const created = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['alert.opened'] }).expect(201)).body;
    const rotated = (await api().post(`/api/v1/webhooks/${created.id}/rotate-secret`).set(...team.auth).expect(200)).body;
    const slackToken = crypto.randomBytes(18).toString('base64url');
    const slackUrl = `http://127.0.0.1:9/services/T0SPEND/B0SCOPE/${slackToken}`;
    const slack = (await api().post('/api/v1/webhooks').set(...team.auth).send({ url: slackUrl, events: ['alert.opened'], format: 'slack' }).expect(201)).body;
    await api().patch(`/api/v1/webhooks/${slack.id}`).set(...team.auth).send({ description: 'ops channel' }).expect(200);
    const secrets = [created.secret as string, rotated.secret as string, slackToken];

    assertNowhere(registryBytes(env.registry), secrets, 'the registry before a checkpoint');
    env.registry.pragma('wal_checkpoint(TRUNCATE)');
    assertNowhere(registryBytes(env.registry), secrets, 'the registry after a checkpoint');

    // The API and the audit log show a slack URL without its path (the token's); the 201 never echoed it either.
    expect(slack.url).to.equal('http://127.0.0.1:9/***');
    const answers = [
      (await api().get('/api/v1/webhooks').set(...team.auth).expect(200)).body,
      (await api().get(`/api/v1/webhooks/${slack.id}`).set(...team.auth).expect(200)).body,
      (await api().get('/api/v1/audit-log?resource_type=webhook').set(...team.auth).expect(200)).body,
    ];
    for (const answer of answers) assertNowhere(Buffer.from(JSON.stringify(answer)), secrets, 'an API answer');
    // ...and the service still has it: opened, it is the URL given.
    expect((await findEndpoint(env.deps.db, env.deps.secrets, team.teamId, slack.id))!.url).to.equal(slackUrl);
  });

  it('with no key given, one is generated into DATA_DIR/secrets.key (mode 0600) at first start and used thereafter; a given key is taken out of the config', () => {
    const dataDir = tempDir('generated-key');
    const first = openSecretBox({ current: undefined, previous: undefined }, dataDir);
    const file = path.join(dataDir, GENERATED_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    const sealed = first.seal('whsec_x', 'context');
    const second = openSecretBox({ current: undefined, previous: undefined }, dataDir);
    expect(second.currentKeyId).to.equal(first.currentKeyId);
    expect(second.open(sealed, 'context')).to.equal('whsec_x');

    const keys: SecretsKeys = { current: newKey(), previous: newKey('SECRETS_KEY_PREVIOUS') };
    const given = openSecretBox(keys, dataDir);
    expect(keys).to.deep.equal({ current: undefined, previous: undefined });
    expect(given.currentKeyId).to.not.equal(first.currentKeyId);
    fs.writeFileSync(file, 'not a key\n');
    expect(() => openSecretBox({ current: undefined, previous: undefined }, dataDir)).to.throw(SecretsKeyError, /SECRETS_KEY: none given.*secrets\.key/);
  });

  it('values stored in clear before this change are sealed at start, and left neither in the file nor in the WAL', async () => {
    const { db, teamId } = await ownRegistry('clear-before');
    const clear = { url: 'https://hooks.example.com/in-clear', secret: `whsec_${crypto.randomBytes(32).toString('base64')}`, previous: `whsec_${crypto.randomBytes(32).toString('base64')}` };
    const slackToken = crypto.randomBytes(18).toString('base64url');
    const insert = db.prepare(
      `INSERT INTO webhook_endpoints (id, team_id, url, description, events, format, active, secret, previous_secret, previous_secret_until, created_at, updated_at)
       VALUES (?, ?, ?, NULL, '["test"]', ?, 0, ?, ?, ?, 1, 1)`,
    );
    insert.run('whk_clearstandard', teamId, clear.url, 'standard', clear.secret, clear.previous, Date.now() + 3_600_000);
    // One row in the file (checkpointed), one still in the WAL: as an install before this change leaves them.
    db.pragma('wal_checkpoint(TRUNCATE)');
    insert.run('whk_clearslack', teamId, `https://hooks.slack.com/services/T1/B1/${slackToken}`, 'slack', null, null, null);
    expect(registryBytes(db).indexOf(clear.secret)).to.not.equal(-1); // the test sees clear values when there are some

    const box = new SecretBox(newKey());
    expect(await resealEndpointSecrets(sqliteDatabase(db), box)).to.equal(4); // url, secret, previous secret; the slack url
    assertNowhere(registryBytes(db), [clear.secret, clear.previous, slackToken], 'the registry after the start');
    expect(registryBytes(db).indexOf(clear.url)).to.equal(-1);

    const endpoint = (await findEndpoint(sqliteDatabase(db), box, teamId, 'whk_clearstandard'))!;
    expect(endpoint).to.include({ url: clear.url, secret: clear.secret, previousSecret: clear.previous });
    expect((await findEndpoint(sqliteDatabase(db), box, teamId, 'whk_clearslack'))!.url).to.equal(`https://hooks.slack.com/services/T1/B1/${slackToken}`);
    // Signing with what was opened is signing with what was stored.
    expect(signatures([endpoint.secret!], 'evt_1', '1700000000', '{}')).to.equal(signatures([clear.secret], 'evt_1', '1700000000', '{}'));
    expect(await resealEndpointSecrets(sqliteDatabase(db), box)).to.equal(0); // the next start has nothing to do
    db.close();
  });

  it('rotation: one start with SECRETS_KEY_PREVIOUS re-seals everything, after which the previous key is not needed (and no longer opens anything)', async () => {
    const { db, teamId } = await ownRegistry('rotation');
    const oldKey = newKey();
    const before = new SecretBox(oldKey);
    const hook = await createEndpoint(sqliteDatabase(db), before, teamId, input('https://hooks.example.com/rotating'));
    const sealedBefore = db.prepare('SELECT url, secret FROM webhook_endpoints WHERE id = ?').get(hook.id) as { url: string; secret: string };
    expect(sealedBefore.secret).to.match(new RegExp(`^enc:v1:${before.currentKeyId}:`));

    const newKeyGiven = newKey();
    const during = new SecretBox(newKeyGiven, { ...oldKey, source: 'SECRETS_KEY_PREVIOUS' });
    expect(await resealEndpointSecrets(sqliteDatabase(db), during)).to.equal(2);
    const after = new SecretBox(newKeyGiven);
    expect(await resealEndpointSecrets(sqliteDatabase(db), after)).to.equal(0);
    expect(await findEndpoint(sqliteDatabase(db), after, teamId, hook.id)).to.include({ url: hook.url, secret: hook.secret });
    const sealedAfter = db.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').get(hook.id) as { secret: string };
    expect(sealedAfter.secret).to.match(new RegExp(`^enc:v1:${after.currentKeyId}:`));

    // The old key alone is now a wrong key: start-up stops and says which variable to fix.
    let refused: unknown;
    await resealEndpointSecrets(sqliteDatabase(db), new SecretBox(oldKey)).catch((err) => (refused = err));
    expect(refused).to.be.instanceOf(SecretsKeyError);
    expect((refused as Error).message).to.match(/SECRETS_KEY.*SECRETS_KEY_PREVIOUS/);
    db.close();
  });

  it('a wrong SECRETS_KEY stops the service at start, naming the variable, before it sends anything', async () => {
    const { db, dataDir, teamId } = await ownRegistry('wrong-key');
    // Sealed with the key the first start generated into DATA_DIR...
    const generated = new SecretBox({ bytes: crypto.randomBytes(32), source: 'secrets.key' });
    await createEndpoint(sqliteDatabase(db), generated, teamId, input('https://hooks.example.com/wrong-key'));
    db.close();
    // ...and started again with another one given from outside.
    const result = await run(process.execPath, [MAIN], { DATA_DIR: dataDir, PORT: '0', SECRETS_KEY: crypto.randomBytes(32).toString('base64') });
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr).to.include('SECRETS_KEY:').and.include('SECRETS_KEY_PREVIOUS').and.not.include('start-up failed');
    expect(result.stdout).to.not.include('listening');
  });

  it('a stored value changed, or copied from another endpoint, does not open; a delivery to it fails without sending anything', async () => {
    const env = testEnv();
    const team = await newTeam();
    const box = env.deps.secrets;
    const first = await createEndpoint(env.deps.db, box, team.teamId, input('http://127.0.0.1:9/first'));
    const receiver = await new Receiver().start();
    try {
      const second = await createEndpoint(env.deps.db, box, team.teamId, input(receiver.url()));
      const stored = (id: string) => env.registry.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').get(id) as { secret: string };

      // Moved: the first endpoint's sealed secret in the second's row.
      env.registry.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(stored(first.id).secret, second.id);
      await expectSealedValueError(findEndpoint(env.deps.db, box, team.teamId, second.id));

      // Changed: one bit of the first's ciphertext flipped.
      const [prefix, body] = [stored(first.id).secret.slice(0, 16), Buffer.from(stored(first.id).secret.slice(16), 'base64')];
      expect(prefix).to.match(/^enc:v1:[0-9a-f]{8}:$/);
      body.writeUInt8(body.readUInt8(20) ^ 1, 20);
      env.registry.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(prefix + body.toString('base64'), first.id);
      await expectSealedValueError(findEndpoint(env.deps.db, box, team.teamId, first.id));

      // Neither signs with garbage nor goes out unsigned: the attempt fails before any request.
      const deliveryId = await queueTestEvent(env.deps.db, team.teamId, second.id, 'tampered');
      const dispatcher = new Dispatcher(env.registry, box, env.config.webhooks, env.deps.logger, { publicUrl: 'http://spendscope.test' });
      const outcome = await dispatcher.attemptNow(deliveryId!);
      await dispatcher.close();
      expect(outcome).to.include({ delivered: false, statusCode: null });
      expect(outcome!.error).to.include('integrity');
      expect(receiver.received).to.have.length(0);
    } finally {
      await receiver.stop();
    }
  });
});
