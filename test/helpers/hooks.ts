import { startTestEnv, stopTestEnv } from './context.js';
import { stopTestPostgres } from './postgres.js';
import { removeTempDirs } from './processes.js';
import { runEndStops } from './run-end.js';

/** Mocha root hooks: one environment (and one embedded engine) for the whole run. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    await startTestEnv();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    try {
      await runEndStops();
      await stopTestEnv();
    } finally {
      await stopTestPostgres();
      // Last: the folders of services, registries and engines the tests made (3 GB after a few runs otherwise).
      removeTempDirs();
    }
  },
};
