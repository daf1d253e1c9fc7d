/**
 * Code that registry migrations run where SQL cannot compute what they write. The step named as a
 * migration file (`NNN_<name>.sql`, the same name on SQLite and PostgreSQL) runs first, in the
 * migration's transaction, and leaves its results in a temporary table; the file's SQL writes them
 * in and drops it. So what a migration changes is still read in its SQL file.
 */
import type { Steps } from './sql.js';

export type MigrationStep = () => Steps<void>;

/** The steps by migration name (the file's name without its number). */
export const MIGRATION_STEPS: Readonly<Record<string, MigrationStep>> = {};
