/**
 * npm run team:create -- --name <name> [--init]
 * Creates a team with its first API key and prints {"id", "name", "apiKey"} as JSON on stdout, and
 * on stderr the DATA_DIR it used. Without --init it refuses a DATA_DIR where no server has run: a
 * key made in a new, empty registry looks valid and is refused by the server that uses another.
 * It touches only the SQLite registry (WAL), so it works while the server runs; the server sees the
 * new key on its next request, because keys are looked up per request.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../src/config.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { MigrationError, migrateRegistry } from '../src/stores/migrations.js';
import { openRegistry } from '../src/stores/sqlite.js';
import { createTeam, TeamNameTaken } from '../src/teams/repository.js';
import { sqliteDatabase } from '../src/stores/sql.js';

const USAGE = 'usage: npm run team:create -- --name <name> [--init]   (name: 1 to 64 characters; --init: create the registry if DATA_DIR has none)';

function fail(message: string, code: number): never {
  process.stderr.write(`team:create: ${message}\n`);
  process.exit(code);
}

let name: string;
let init = false;
try {
  const { values } = parseArgs({ options: { name: { type: 'string' }, init: { type: 'boolean' } }, strict: true });
  name = (values.name ?? '').trim();
  init = values.init ?? false;
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`, 2);
}
if (!name || name.length > 64 || /[\u0000-\u001f]/.test(name)) fail(USAGE, 2);

try {
  const config = loadConfig();
  const file = path.join(config.dataDir, 'registry.db');
  if (!fs.existsSync(file) && !init) {
    fail(
      `no registry in DATA_DIR=${config.dataDir} (no ${file}): no server has run with this DATA_DIR.\n` +
        'Set DATA_DIR to the directory your server uses, or pass --init to create a new registry here.',
      1,
    );
  }
  process.stderr.write(`team:create: DATA_DIR=${config.dataDir}${fs.existsSync(file) ? '' : ' (new registry, --init)'}\n`);
  const registry = openRegistry(config.dataDir);
  try {
    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    const { team, key } = await createTeam(sqliteDatabase(registry), name);
    process.stdout.write(`${JSON.stringify({ id: team.id, name: team.name, apiKey: key.apiKey })}\n`);
  } finally {
    registry.close();
  }
} catch (err) {
  if (err instanceof TeamNameTaken || err instanceof ConfigError || err instanceof MigrationError) fail(err.message, 1);
  throw err;
}
