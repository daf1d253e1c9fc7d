/** BI users read the event store directly: every table, view and stored column explains itself. */
import { expect } from 'chai';
import { testEnv } from '../helpers/context.js';

describe('event store schema', () => {
  it('has a comment on every table and view, and on every column of every table', async () => {
    const { events } = testEnv();
    const tables = await events.query<{ name: string; engine: string; comment: string }>(
      'SELECT name, engine, comment FROM system.tables WHERE database = currentDatabase()',
    );
    expect(tables.map((t) => t.name)).to.include.members(['events', 'spend_hourly_by', 'spend_minutely', 'spend_daily_by']);
    for (const table of tables.filter((t) => !t.name.startsWith('mig_') && !t.name.startsWith('schema_migrations_'))) {
      expect(table.comment, `table ${table.name}`).to.not.equal('');
    }
    const stored = tables.filter((t) => t.engine.endsWith('MergeTree') && !t.name.startsWith('mig_') && !t.name.startsWith('schema_migrations_'));
    const columns = await events.query<{ table: string; name: string; comment: string }>(
      'SELECT table, name, comment FROM system.columns WHERE database = currentDatabase() AND table IN {tables:Array(String)}',
      { tables: stored.map((t) => t.name) },
    );
    expect(columns.length).to.be.greaterThan(40);
    for (const column of columns) expect(column.comment, `${column.table}.${column.name}`).to.not.equal('');
  });
});
