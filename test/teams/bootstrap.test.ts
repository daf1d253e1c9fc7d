/** First start: team "default" keyed from BOOTSTRAP_API_KEY_FILE, and the key not kept afterwards. */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { bootstrapDefaultTeam } from '../../src/teams/bootstrap.js';
import { bearer } from '../helpers/common.js';
import { api, appWith } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';
import { sqliteDatabase } from '../../src/stores/sql.js';

describe('bootstrap of team "default"', () => {
  it('with BOOTSTRAP_API_KEY_FILE, keys team "default" with the file\'s key, never prints it, and drops it from the config', async () => {
    const dataDir = tempDir('bootstrap-file');
    const keyFile = path.join(dataDir, 'bootstrap-api-key');
    const key = 'ss_from-a-docker-secret-0123456789';
    fs.writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY_FILE: keyFile });
    const registry = openRegistry(dataDir);
    try {
      migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
      const printed: string[] = [];
      const team = await bootstrapDefaultTeam(sqliteDatabase(registry), config, (line) => printed.push(line));
      expect(team?.name).to.equal('default');
      expect(printed.join('\n')).to.include('BOOTSTRAP_API_KEY_FILE').and.not.include(key);
      expect(config.bootstrapApiKey).to.equal(undefined);

      // The key works against this registry: the API answers as team "default".
      const res = await api(appWith([], { registry, db: sqliteDatabase(registry) })).get('/api/v1/team').set(...bearer(key)).expect(200);
      expect(res.body.name).to.equal('default');

      // A later start with the file still there creates nothing, and still drops the key.
      const again = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY_FILE: keyFile });
      expect(await bootstrapDefaultTeam(sqliteDatabase(registry), again, () => undefined)).to.equal(undefined);
      expect(again.bootstrapApiKey).to.equal(undefined);
    } finally {
      registry.close();
    }
  });
});
