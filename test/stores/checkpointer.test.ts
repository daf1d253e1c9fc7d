import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { Checkpointer, FALLBACK_PAGES } from '../../src/stores/checkpointer.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { tempDir } from '../helpers/processes.js';

describe('WAL checkpoints on their own thread', () => {
  it('copies committed pages into the registry file while the writer only commits, and stops so that the WAL can go', async () => {
    const dir = tempDir('checkpointer');
    const file = path.join(dir, 'registry.db');
    const db = openRegistry(dir);
    const checkpointer = new Checkpointer(db, pino({ level: 'silent' }), 20);
    // The writer's own checkpoint only past 64 MiB: what reaches the file below is the thread's work.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).to.equal(FALLBACK_PAGES);
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    // About 2 MB: 500 pages, under SQLite's default mark of 1,000, so without the thread nothing is copied.
    db.transaction(() => {
      for (let i = 0; i < 2_000; i++) insert.run(`${i}`.padEnd(1_000, 'x'));
    })();
    const copied = async () => {
      for (let waited = 0; waited < 10_000; waited += 20) {
        if (fs.statSync(file).size > 2_000_000) return true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return false;
    };
    expect(await copied(), 'the rows reached the registry file').to.equal(true);
    // Nothing left for the writer: every frame is in the file.
    const [left] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    expect(left!.checkpointed).to.equal(left!.log);
    await checkpointer.stop();
    await checkpointer.stop();
    db.close();
    // The last connection to close removes the WAL: the thread's was closed first.
    expect(fs.existsSync(`${file}-wal`)).to.equal(false);
    const reopened = openRegistry(dir);
    expect(reopened.prepare('SELECT count(*) AS n FROM t').get()).to.deep.equal({ n: 2_000 });
    reopened.close();
  });
});
