/**
 * npm run team:create -- --name <name> [--init]
 * Creates a team with its first admin key where the service's configuration keeps teams: in
 * PostgreSQL with DATABASE_URL (every instance takes the key at once), else in the SQLite registry
 * under DATA_DIR (the running server takes it from its next request). Prints {"id", "name",
 * "apiKey"} as JSON on stdout, and on stderr where it wrote. Recorded in the operator audit log.
 * Without --init it refuses a DATA_DIR where no server has run: a key made in a new, empty
 * registry looks valid and is refused by the server that uses another; --init with DATABASE_URL
 * is refused, since PostgreSQL needs no such thing.
 */
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../src/config.js';
import { provisionTeam } from '../src/operator/repository.js';
import { openToolRegistry, RegistryNotFound } from '../src/stores/open.js';
import { MigrationError } from '../src/stores/migrations.js';
import { normalTeamName, teamNameProblem, TeamNameTaken } from '../src/teams/repository.js';

const USAGE = 'usage: npm run team:create -- --name <name> [--init]   (name: 1 to 64 characters; --init: create the SQLite registry if DATA_DIR has none)';

function fail(message: string, code: number): never {
  process.stderr.write(`team:create: ${message}\n`);
  process.exit(code);
}

let name: string;
let init = false;
try {
  const { values } = parseArgs({ options: { name: { type: 'string' }, init: { type: 'boolean' } }, strict: true });
  name = normalTeamName(values.name ?? '');
  init = values.init ?? false;
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`, 2);
}
const problem = teamNameProblem(name);
if (problem) fail(`--name ${problem}\n${USAGE}`, 2);

try {
  const registry = await openToolRegistry(loadConfig(), { init });
  try {
    process.stderr.write(`team:create: ${registry.where}\n`);
    const { team, key } = await provisionTeam(registry.db, name, { actor: 'team_create_cli', requestId: `cli_${crypto.randomUUID()}` });
    process.stdout.write(`${JSON.stringify({ id: team.id, name: team.name, apiKey: key.apiKey })}\n`);
  } finally {
    await registry.close();
  }
} catch (err) {
  if (err instanceof TeamNameTaken || err instanceof ConfigError || err instanceof MigrationError || err instanceof RegistryNotFound) fail(err.message, 1);
  throw err;
}
