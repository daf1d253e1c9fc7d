import type { Config } from '../config.js';
import type { Database } from '../stores/sql.js';
import { countTeams, createTeam, TeamNameTaken, type Team } from './repository.js';

/**
 * First start: with no team at all, create `default`, keyed by BOOTSTRAP_API_KEY(_FILE) when set,
 * else by a generated key that is printed once (it is stored only as a hash). Later starts do
 * nothing, so a rotated bootstrap key stays rotated. Either way the key leaves `config` here: it
 * is needed once, and a config object lives as long as the process.
 */
export async function bootstrapDefaultTeam(
  db: Database,
  config: Pick<Config, 'bootstrapApiKey' | 'host' | 'port'>,
  print: (line: string) => void,
): Promise<Team | undefined> {
  const given = config.bootstrapApiKey;
  config.bootstrapApiKey = undefined;
  if ((await countTeams(db)) > 0) return undefined;
  let made: Awaited<ReturnType<typeof createTeam>>;
  try {
    made = await createTeam(db, 'default', given?.key);
  } catch (err) {
    // Several instances starting together on an empty PostgreSQL: one of them creates it.
    if (err instanceof TeamNameTaken) return undefined;
    throw err;
  }
  const { team, key } = made;
  if (given) {
    print(`Created team "default" (${team.id}) with the key from ${given.variable}.`);
  } else {
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    print(`Created team "default" (${team.id}). Its API key, shown only this once:`);
    print(`  ${key.apiKey}`);
    print(`Try it: curl -H "Authorization: Bearer ${key.apiKey}" http://${host}:${config.port}/api/v1/team`);
  }
  return team;
}
