import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MigrationError, migrateEventStore, migrateRegistry, migrateSharedStore, readMigrations, splitStatements } from '../../src/stores/migrations.js';
import { openSharedStore } from '../../src/stores/postgres.js';
import { postgresDatabase, run, sqliteDatabase, type Database } from '../../src/stores/sql.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { testEnv } from '../helpers/context.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/processes.js';
import { registryBytes } from '../helpers/registry-bytes.js';
import { activePolicyRows } from '../../src/policies/repository.js';
import { compilePolicy } from '../../src/evaluation/policies.js';
import type { Limit } from '../../src/policies/limits.js';

function writeMigrations(files: Record<string, string>): string {
  const dir = tempDir('migrations');
  for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), sql);
  return dir;
}

/**
 * A registry migrated with the project's SQLite migrations before `version`; `applyNext()`
 * applies that version's file (`name`) and returns what it applied.
 */
function registryBefore(version: string): { db: ReturnType<typeof openRegistry>; name: string; applyNext: () => string[] } {
  const all = fs.readdirSync(path.join(SCHEMA_DIR, 'sqlite')).filter((f) => f.endsWith('.sql'));
  const name = all.find((f) => f.startsWith(version))!;
  const dir = tempDir(`migrations-${version}`);
  for (const f of all.filter((f) => f < version)) fs.copyFileSync(path.join(SCHEMA_DIR, 'sqlite', f), path.join(dir, f));
  const db = openRegistry(tempDir(`registry-${version}`));
  migrateRegistry(db, dir);
  return {
    db,
    name,
    applyNext: () => {
      fs.copyFileSync(path.join(SCHEMA_DIR, 'sqlite', name), path.join(dir, name));
      return migrateRegistry(db, dir);
    },
  };
}

/** As registryBefore, on a fresh PostgreSQL database migrated by the project's PostgreSQL migrations. */
async function sharedStoreBefore(version: string) {
  const all = fs.readdirSync(path.join(SCHEMA_DIR, 'postgres')).filter((f) => f.endsWith('.sql'));
  const name = all.find((f) => f.startsWith(version))!;
  const dir = tempDir(`pg-migrations-${version}`);
  for (const f of all.filter((f) => f < version)) fs.copyFileSync(path.join(SCHEMA_DIR, 'postgres', f), path.join(dir, f));
  const pool = openSharedStore(await freshDatabase(`migrations-${version}`));
  await migrateSharedStore(pool, dir);
  return {
    db: postgresDatabase(pool),
    name,
    applyNext: () => {
      fs.copyFileSync(path.join(SCHEMA_DIR, 'postgres', name), path.join(dir, name));
      return migrateSharedStore(pool, dir);
    },
  };
}


/**
 * Policies of each kind stored before currencies (every asset, one asset, several assets) come out
 * of the policy-currency migration as they were, with no currency: amounts of the asset, as before.
 */
async function expectPoliciesKept(db: Database, applyNext: () => Promise<string[]> | string[], name: string): Promise<void> {
  await db.transaction(async (sql) => {
    await sql.run(`INSERT INTO teams (id, name, created_at) VALUES ('t1', 'one', 1)`);
    const kinds = [
      ['p1', null],
      ['p2', '{"assets":["USDC"]}'],
      ['p3', '{"assets":["USDC","EURC"]}'],
    ] as const;
    for (const [id, match] of kinds) {
      await sql.run(
        `INSERT INTO policies (id, team_id, name, limits, action, timezone, active, created_at, updated_at, scope, match_filter, notify_at, starts_at)
         VALUES (?, 't1', ?, '[{"kind":"daily","amount":"100"},{"kind":"per_call","amount":"5"}]', 'block', NULL, 1, 5, 6, 'agent', ?, '[80]', 60000)`,
        [id, `budget ${id}`, match],
      );
    }
  });
  const before = await db.all<Record<string, unknown>>('SELECT * FROM policies ORDER BY id');
  expect(await applyNext()).to.deep.equal([name]);
  const after = await db.all<Record<string, unknown>>('SELECT * FROM policies ORDER BY id');
  expect(after.map(({ currency: _c, ...rest }) => rest)).to.deep.equal(before);
  expect(after.map((p) => p.currency)).to.deep.equal([null, null, null]);
  const active = await db.transaction((sql) => activePolicyRows(sql, 't1'));
  for (const row of active) {
    const compiled = compilePolicy({ ...row, limits: JSON.parse(row.limits) as Limit[] });
    expect(compiled.currency, row.id).to.equal(null);
    expect(compiled.limits.map((l) => l.measure)).to.deep.equal(['spend', 'spend']);
  }
}

const MASKED_TABLES = ['management_audit', 'alerts', 'webhook_deliveries'] as const;
const rowsOf = async (db: Database) => Promise.all(MASKED_TABLES.map((t) => db.all<Record<string, unknown>>(`SELECT * FROM ${t} ORDER BY id`)));

/**
 * Rows holding webhook URLs in clear as the release before wrote them (issue 58): the audit log's
 * entries of endpoints (a slack one masked then, with its token left before a trailing slash), an
 * alert of an endpoint disabled, and the event that carried it. Returns the secrets in them and
 * what each rewritten row should hold after the migration, by id.
 */
async function writeClearWebhookUrls(db: Database): Promise<{ secrets: string[]; rewritten: Record<string, Record<string, string>> }> {
  const s = Array.from({ length: 8 }, () => crypto.randomBytes(10).toString('hex'));
  await db.run(`INSERT INTO teams (id, name, created_at) VALUES ('t1', 'one', 1)`);
  const endpoint = `INSERT INTO webhook_endpoints (id, team_id, url, description, events, format, active, secret, created_at, updated_at)
                    VALUES (?, 't1', 'enc:v1:00000000:sealed', NULL, '["test"]', ?, 1, NULL, 1, 1)`;
  await db.run(endpoint, ['whk_std', 'standard']);
  await db.run(endpoint, ['whk_slack', 'slack']);
  const rewritten: Record<string, Record<string, string>> = {};
  let at = 0;
  const entry = async (id: string, resource: string, changes: Record<string, unknown>, masked?: Record<string, unknown>) => {
    await db.run(
      `INSERT INTO management_audit (id, team_id, at, key_id, key_name, request_id, method, route, action, resource_type, resource_id, changes)
       VALUES (?, 't1', ?, 'key_1', 'alice', 'req-1', 'PATCH', '/webhooks/:id', 'webhook.update', ?, ?, ?)`,
      [id, ++at, resource.startsWith('whk_') ? 'webhook' : 'policy', resource, JSON.stringify(changes)],
    );
    if (masked) rewritten[id] = { changes: JSON.stringify({ ...changes, ...masked }) };
  };
  const created = (url: string, format: string) => ({ url: { before: null, after: url }, format: { before: null, after: format } });
  // A slack endpoint deleted since, on a host of its own: its format is known from its first entry only.
  await entry('chg_0', 'whk_gone', created(`https://chat.example.com/hooks/${s[0]}/***`, 'slack'), { url: { before: null, after: 'https://chat.example.com/***' } });
  await entry('chg_1', 'whk_std', created(`https://hooks.example.com/x?token=${s[1]}`, 'standard'), { url: { before: null, after: 'https://hooks.example.com/x?token=***' } });
  await entry(
    'chg_2',
    'whk_std',
    { url: { before: `https://hooks.example.com/x?token=${s[1]}`, after: `https://${s[2]}:${s[3]}@hooks.example.com/x?token=${s[1]}` } },
    { url: { before: 'https://hooks.example.com/x?token=***', after: 'https://***:***@hooks.example.com/x?token=***' } },
  );
  await entry('chg_3', 'whk_slack', created(`https://hooks.slack.com/services/T1/B1/${s[4]}/***`, 'slack'), { url: { before: null, after: 'https://hooks.slack.com/***' } });
  await entry(
    'chg_4',
    'whk_gone',
    { url: { before: `https://chat.example.com/hooks/${s[0]}/***`, after: `https://chat.example.com/hooks/${s[5]}` } },
    { url: { before: 'https://chat.example.com/***', after: 'https://chat.example.com/***' } },
  );
  // An endpoint no row or entry gives the format of: a Slack host, in capitals, is enough.
  await entry('chg_5', 'whk_unknown', { url: { before: null, after: `HTTPS://HOOKS.SLACK.COM/services/T2/B2/${s[6]}` } }, { url: { before: null, after: 'https://hooks.slack.com/***' } });
  await entry('chg_6', 'pol_1', { name: { before: 'a', after: 'b' } });
  await entry('chg_7', 'whk_std', { description: { before: null, after: 'ops' } });

  const url = `https://hooks.example.com/x?token=${s[7]}`;
  const shown = 'https://hooks.example.com/x?token=***';
  const message = (u: string) => `Webhook endpoint whk_std (${u}) was disabled: every attempt failed for 24 hours. Fix it, then PATCH it with {"active": true}.`;
  const details = (u: string) => ({ endpointId: 'whk_std', url: u, failingForHours: 24 });
  const alert = `INSERT INTO alerts (id, team_id, dedup_key, type, kind, severity, status, agent_id, subject, details, message, sample_event_ids, count, first_seen, last_seen, created_at, updated_at)
                 VALUES (?, 't1', ?, 'system', 'webhook_disabled', 'warning', 'open', '', ?, ?, ?, '[]', 1, 1, 1, 1, 1)`;
  await db.run(alert, ['alr_1', 'webhook_disabled:whk_std', 'whk_std', JSON.stringify(details(url)), message(url)]);
  rewritten.alr_1 = { details: JSON.stringify(details(shown)), message: message(shown) };
  const undecrypted = 'its stored URL does not decrypt';
  await db.run(alert, ['alr_2', 'webhook_disabled:whk_slack', 'whk_slack', JSON.stringify({ ...details(undecrypted), endpointId: 'whk_slack' }), message(undecrypted)]);
  const event = (u: string) => ({ type: 'alert.opened', id: 'evt_1', timestamp: '2026-11-23T10:00:00.000Z', data: { id: 'alr_1', type: 'system', kind: 'webhook_disabled', details: details(u), message: message(u) } });
  const delivery = `INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, attempts, created_at) VALUES (?, 't1', ?, ?, ?, ?, 'delivered', 1, 1)`;
  await db.run(delivery, ['dlv_1', 'whk_slack', 'evt_1', 'alert.opened', JSON.stringify(event(url))]);
  rewritten.dlv_1 = { payload: JSON.stringify(event(shown)) };
  await db.run(delivery, ['dlv_2', 'whk_std', 'evt_2', 'test', JSON.stringify({ type: 'test', id: 'evt_2', timestamp: '2026-11-23T10:00:00.000Z', data: { message: 'hello' } })]);
  return { secrets: s, rewritten };
}

/** After the migration: each row as it was, but for the URLs it held, now masked; the audit log still append-only. */
async function expectWebhookUrlsMasked(db: Database, before: Record<string, unknown>[][], rewritten: Record<string, Record<string, string>>, secrets: string[]): Promise<void> {
  const after = await rowsOf(db);
  expect(after).to.deep.equal(before.map((rows) => rows.map((row) => ({ ...row, ...rewritten[row.id as string] }))));
  for (const secret of secrets) expect(JSON.stringify(after)).to.not.include(secret);
  for (const change of ['UPDATE management_audit SET key_name = ?', 'DELETE FROM management_audit WHERE key_name = ?']) {
    let refused: unknown;
    await db.run(change, ['alice']).catch((err) => (refused = err));
    expect((refused as Error)?.message, change).to.match(/append-only/);
  }
}

describe('migrations', () => {
  describe('registry (SQLite)', () => {
    it('applies files in version order, records them, and is safe to re-run', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({
        '002_add_color.sql': 'ALTER TABLE widgets ADD COLUMN color TEXT;',
        '001_widgets.sql': 'CREATE TABLE widgets (id INTEGER PRIMARY KEY);',
        'README.md': 'not a migration',
      });
      expect(migrateRegistry(db, dir)).to.deep.equal(['001_widgets.sql', '002_add_color.sql']);
      expect(migrateRegistry(db, dir)).to.deep.equal([]);
      const recorded = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
      expect(recorded).to.deep.equal([
        { version: 1, name: '001_widgets.sql' },
        { version: 2, name: '002_add_color.sql' },
      ]);
      db.prepare('INSERT INTO widgets (id, color) VALUES (1, ?)').run('red');
      db.close();
    });

    it('stops with a clear message on a failing migration and records nothing of it', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({
        '001_ok.sql': 'CREATE TABLE a (id INTEGER);',
        '002_broken.sql': 'CREATE TABLE b (id INTEGER); CREATE TABLE oops (;',
      });
      expect(() => migrateRegistry(db, dir)).to.throw(MigrationError, /002_broken\.sql failed/);
      // The failing file rolled back whole: its first statement left no table behind.
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'b'").all();
      expect(tables).to.deep.equal([]);
      const recorded = db.prepare('SELECT name FROM schema_migrations').all();
      expect(recorded).to.deep.equal([]);
      db.close();
    });

    it('refuses an applied migration whose file was edited', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({ '001_a.sql': 'CREATE TABLE a (id INTEGER);' });
      migrateRegistry(db, dir);
      fs.writeFileSync(path.join(dir, '001_a.sql'), 'CREATE TABLE a (id INTEGER, x TEXT);');
      expect(() => migrateRegistry(db, dir)).to.throw(MigrationError, /changed after it was applied/);
      db.close();
    });

    it('rejects badly named files and duplicate versions', () => {
      expect(() => readMigrations(writeMigrations({ 'create.sql': 'SELECT 1;' }))).to.throw(MigrationError, /NNN_name/);
      expect(() => readMigrations(writeMigrations({ '001_a.sql': '', '001_b.sql': '' }))).to.throw(MigrationError, /share version 1/);
    });

    it('018 (approvals) rebuilds policies, authorizations and alerts keeping every row, the agents a policy names, and the cascade', () => {
      const all = fs.readdirSync(path.join(SCHEMA_DIR, 'sqlite')).filter((f) => f.endsWith('.sql'));
      const dir = tempDir('migrations-018');
      for (const f of all.filter((f) => f < '018')) fs.copyFileSync(path.join(SCHEMA_DIR, 'sqlite', f), path.join(dir, f));
      const db = openRegistry(tempDir('registry-018'));
      migrateRegistry(db, dir);
      db.prepare(`INSERT INTO teams (id, name, created_at) VALUES ('t1', 'one', 1)`).run();
      db.prepare(`INSERT INTO policies (id, team_id, name, limits, action, timezone, active, created_at, updated_at, scope, match_filter, notify_at, starts_at)
                  VALUES ('p1', 't1', 'budget', '[{"kind":"daily","amount":"1"}]', 'block', NULL, 1, 5, 6, 'pool', '{"assets":["usdc"]}', '[80]', 60000)`).run();
      for (const agent of ['a1', 'a2']) db.prepare(`INSERT INTO policy_agents (policy_id, team_id, external_id) VALUES ('p1', 't1', ?)`).run(agent);
      db.prepare(`INSERT INTO authorizations (id, team_id, agent_id, endpoint, domain, amount, decision, state, checks, reasons, created_at, expires_at, category, tags)
                  VALUES ('au1', 't1', 'a1', 'https://x.example/', 'x.example', '0.5', 'approved', 'held', '[]', '[]', 10, 20, 'api', NULL)`).run();
      db.prepare(`INSERT INTO alerts (id, team_id, dedup_key, type, kind, severity, status, agent_id, details, message, sample_event_ids, count, first_seen, last_seen, created_at, updated_at)
                  VALUES ('al1', 't1', 'k', 'threshold', 'daily', 'info', 'open', 'a1', '{}', 'm', '[]', 3, 1, 2, 1, 2)`).run();
      const before = ['policies', 'authorizations', 'alerts'].map((t) => db.prepare(`SELECT * FROM ${t}`).all());
      fs.copyFileSync(path.join(SCHEMA_DIR, 'sqlite', all.find((f) => f.startsWith('018'))!), path.join(dir, all.find((f) => f.startsWith('018'))!));
      expect(migrateRegistry(db, dir)).to.deep.equal([all.find((f) => f.startsWith('018'))]);
      const after = ['policies', 'authorizations', 'alerts'].map((t) => db.prepare(`SELECT * FROM ${t}`).all() as Record<string, unknown>[]);
      // Every old column as it was; the new ones empty.
      expect(after[0]!.map(({ approval_timeout_s: _t, allow_list: _a, ...rest }) => rest)).to.deep.equal(before[0]);
      expect(after[0]![0]).to.include({ approval_timeout_s: null, allow_list: null });
      expect(after[1]!.map(({ hold_s: _h, pending_until: _p, decided_at: _d, decided_by: _b, decision_note: _n, ...rest }) => rest)).to.deep.equal(before[1]);
      expect(after[2]).to.deep.equal(before[2]);
      expect(db.prepare(`SELECT external_id FROM policy_agents WHERE policy_id = 'p1' ORDER BY 1`).pluck().all()).to.deep.equal(['a1', 'a2']);
      // The wider checks, and the cascade from policies to the agents they name.
      db.prepare(`UPDATE policies SET action = 'approve' WHERE id = 'p1'`).run();
      db.prepare(`UPDATE authorizations SET state = 'pending', decision = 'pending' WHERE id = 'au1'`).run();
      expect(() => db.prepare(`UPDATE policies SET action = 'maybe' WHERE id = 'p1'`).run()).to.throw(/CHECK/);
      db.prepare(`DELETE FROM policies WHERE id = 'p1'`).run();
      expect(db.prepare(`SELECT count(*) FROM policy_agents`).pluck().get()).to.equal(0);
      expect(db.pragma('foreign_key_check')).to.deep.equal([]);
      db.close();
    });

    it('020 (authorization checks as comparisons) keeps every row and index, refuses what the old checks refused, and builds no temporary B-tree per insert', () => {
      const { db, name, applyNext } = registryBefore('020');
      const insert = `INSERT INTO authorizations (id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, decision, state, checks, reasons,
                        idempotency_key, created_at, expires_at, captured_amount, captured_at, captured_by, voided_at, category, tags, hold_s, pending_until,
                        decided_at, decided_by, decision_note) VALUES (?, 't1', ?, 'https://x.example/', 'x.example', '0.5', ?, ?, ?, ?, ?, '[["p1","b","block","daily",0,86400000,"1","0.25","0"]]',
                        '["why"]', ?, ?, ?, ?, ?, ?, ?, 'api', ?, 300, ?, ?, ?, ?)`;
      db.prepare(`INSERT INTO teams (id, name, created_at) VALUES ('t1', 'one', 1)`).run();
      db.prepare(insert).run('au1', 'a1', 'USDC', 'eip155:8453', '0xabc', 'approved', 'captured', 'k1', 10, 20, '0.4', 15, 'au1.capture', null, '["x"]', null, 10, null, null);
      db.prepare(insert).run('au2', 'a2', null, null, null, 'pending', 'pending', null, 11, 21, null, null, null, null, null, 21, null, null, null);
      db.prepare(insert).run('au3', 'a1', null, null, null, 'declined', 'declined', null, 12, 22, null, null, null, null, null, null, 18, 'finance', 'no');
      db.prepare(insert).run('au4', 'a1', null, null, null, 'approved', 'voided', null, 13, 23, null, null, null, 14, null, null, 13, null, null);
      const before = db.prepare('SELECT rowid AS r, * FROM authorizations ORDER BY id').all();
      const indexes = () => db.prepare(`SELECT name, sql FROM sqlite_master WHERE tbl_name = 'authorizations' AND type = 'index' AND sql IS NOT NULL ORDER BY name`).all();
      const indexesBefore = indexes();
      const opcodes = () => (db.prepare(`EXPLAIN ${insert}`).all(...Array<null>(19).fill(null)) as { opcode: string }[]).map((op) => op.opcode);
      expect(opcodes()).to.include('OpenEphemeral');
      expect(applyNext()).to.deep.equal([name]);
      expect(db.prepare('SELECT rowid AS r, * FROM authorizations ORDER BY id').all()).to.deep.equal(before);
      expect(indexes()).to.deep.equal(indexesBefore);
      // The same values allowed, the same refused.
      expect(() => db.prepare(insert).run('au5', 'a1', null, null, null, 'maybe', 'held', null, 1, 2, null, null, null, null, null, null, 1, null, null)).to.throw(/CHECK/);
      expect(() => db.prepare(`UPDATE authorizations SET state = 'lost' WHERE id = 'au1'`).run()).to.throw(/CHECK/);
      db.prepare(insert).run('au6', 'a1', null, null, null, 'approved', 'held', null, 1, 2, null, null, null, null, null, null, 1, null, null);
      // What the rebuild is for: a decision's INSERT opens no temporary table for its checks.
      expect(opcodes()).not.to.include('OpenEphemeral');
      expect(db.pragma('foreign_key_check')).to.deep.equal([]);
      db.close();
    });

    it('022 (list indexes) keeps every row, the newest-first lists read the indexes backwards without a sort, the lists of one agent or status are searched, and new rows fill their pages', () => {
      const { db, name, applyNext } = registryBefore('022');
      db.prepare(`INSERT INTO teams (id, name, created_at) VALUES ('t1', 'one', 1)`).run();
      const insert = db.prepare(`INSERT INTO authorizations (id, team_id, agent_id, endpoint, domain, amount, decision, state, checks, reasons, created_at, expires_at)
                                 VALUES (?, 't1', ?, 'https://x.example/', 'x.example', '0.5', 'approved', 'held', '[]', '[]', ?, ?)`);
      // Rows as the service writes them: time goes up, the agents take turns.
      const fill = db.transaction((from: number, rows: number) => {
        for (let i = from; i < from + rows; i++) insert.run(`au${String(i).padStart(8, '0')}`, `agent-${i % 20}`, 1_000 + i, 31_000 + i);
      });
      fill(0, 200);
      const rows = () => db.prepare('SELECT rowid AS r, * FROM authorizations ORDER BY rowid').all();
      const before = rows();
      const list = `SELECT id FROM authorizations WHERE team_id = 't1' AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT 5`;
      // The repositories' queries, with their values bound as they bind them (listAuthorizations, listAlerts).
      const byAgent = `SELECT id FROM authorizations WHERE team_id = ? AND agent_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`;
      const alerts = `SELECT id FROM alerts WHERE team_id = 't1' ORDER BY created_at DESC, id DESC LIMIT 5`;
      const page = () => db.prepare(list).all(1_150, 1_150, 'au00000150');
      const agentPage = () => db.prepare(byAgent).all('t1', 'agent-3', 5);
      const pageBefore = page();
      const agentPageBefore = agentPage();
      expect(applyNext()).to.deep.equal([name]);
      expect(rows()).to.deep.equal(before);
      expect(page()).to.deep.equal(pageBefore);
      expect(agentPage()).to.deep.equal(agentPageBefore);
      expect(pageBefore.map((r) => (r as { id: string }).id)).to.deep.equal(['au00000149', 'au00000148', 'au00000147', 'au00000146', 'au00000145']);
      const plan = (query: string, ...args: unknown[]) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${query}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
      expect(plan(list, 0, 0, '')).to.match(/USING (COVERING )?INDEX authorizations_team_created/).and.not.match(/TEMP B-TREE/);
      expect(plan(byAgent, 't1', 'agent-3', 5)).to.match(/USING (COVERING )?INDEX authorizations_team_agent/).and.not.match(/TEMP B-TREE/);
      expect(plan(alerts)).to.match(/USING (COVERING )?INDEX alerts_by_team/).and.not.match(/TEMP B-TREE/);
      // The alerts of one agent, and the open ones, are searched for, not found by walking the team's.
      const alertsOf = (column: string, value: string) =>
        plan(`SELECT * FROM alerts WHERE team_id = ? AND ${column} = ? ORDER BY created_at DESC, id DESC LIMIT ?`, 't1', value, 5);
      expect(alertsOf('agent_id', 'a1')).to.match(/USING INDEX alerts_by_agent \(team_id=\? AND agent_id=\?\)/).and.not.match(/TEMP B-TREE/);
      expect(alertsOf('status', 'open')).to.match(/USING INDEX alerts_by_status \(team_id=\? AND status=\?\)/).and.not.match(/TEMP B-TREE/);
      // What it is for: rows appended in time order leave the pages of the (team, time) index full.
      fill(200, 20_000);
      const unused = db.prepare(`SELECT sum(unused) * 1.0 / sum(pgsize) AS share FROM dbstat WHERE name = 'authorizations_team_created' AND pagetype = 'leaf'`).get() as { share: number };
      expect(unused.share).to.be.below(0.2);
      db.close();
    });

    it('a code step named as a migration runs before its SQL, in its transaction; one that fails leaves nothing applied or recorded', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({
        '001_widgets.sql': 'CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT);',
        '002_name_widgets.sql': 'INSERT INTO widgets (id, name) SELECT id, name FROM widget_names; DROP TABLE widget_names;',
        '003_broken.sql': 'CREATE TABLE never (id INTEGER);',
      });
      const steps = {
        name_widgets: function* () {
          yield* run('CREATE TEMP TABLE widget_names (id INTEGER, name TEXT)');
          yield* run('INSERT INTO widget_names (id, name) VALUES (?, ?)', [1, 'computed in code']);
        },
        broken: function* () {
          yield* run('CREATE TEMP TABLE half_done (id INTEGER)');
          throw new Error('the step failed');
        },
      };
      expect(() => migrateRegistry(db, dir, 'schema_migrations', steps)).to.throw(MigrationError, /003_broken\.sql failed: the step failed/);
      // The three files are applied in one transaction: none of them was.
      expect(db.prepare(`SELECT name FROM sqlite_master WHERE name IN ('widgets', 'never') UNION ALL SELECT name FROM sqlite_temp_master`).all()).to.deep.equal([]);
      fs.rmSync(path.join(dir, '003_broken.sql'));
      expect(migrateRegistry(db, dir, 'schema_migrations', steps)).to.deep.equal(['001_widgets.sql', '002_name_widgets.sql']);
      expect(db.prepare('SELECT id, name FROM widgets').all()).to.deep.equal([{ id: 1, name: 'computed in code' }]);
      expect(db.prepare('SELECT name FROM sqlite_temp_master').all()).to.deep.equal([]);
      db.close();
    });

    it('023 (mask webhook URLs) rewrites the URLs the audit log, alerts and events held in clear, as the API shows them, and leaves them in no page of the file', async () => {
      const { db, name, applyNext } = registryBefore('023');
      const { secrets, rewritten } = await writeClearWebhookUrls(sqliteDatabase(db));
      const before = await rowsOf(sqliteDatabase(db));
      // As an install of the release before has them: in the file itself, not only in the WAL.
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(registryBytes(db).includes(secrets[1]!)).to.equal(true);
      expect(applyNext()).to.deep.equal([name]);
      await expectWebhookUrlsMasked(sqliteDatabase(db), before, rewritten, secrets);
      expect(db.prepare('SELECT name FROM sqlite_temp_master').all()).to.deep.equal([]);
      const bytes = registryBytes(db);
      for (const secret of secrets) expect(bytes.includes(secret), `${secret} in the registry's files`).to.equal(false);
      expect(applyNext()).to.deep.equal([]);
      db.close();
    });

    it('028 (policy currency) keeps every policy as it was, with no currency: amounts of the asset, as before', async () => {
      const { db, name, applyNext } = registryBefore('028');
      await expectPoliciesKept(sqliteDatabase(db), applyNext, name);
      db.close();
    });

    it('the project registry migrations apply to an empty file', () => {
      const db = openRegistry(tempDir('registry'));
      expect(migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'))).to.include('001_teams_and_keys.sql');
      db.close();
    });
  });

  describe('shared store (PostgreSQL)', function () {
    this.timeout(120_000);

    it('013 (mask webhook URLs) rewrites the URLs the audit log, alerts and events held in clear, as the API shows them', async () => {
      const { db, name, applyNext } = await sharedStoreBefore('013');
      try {
        const { secrets, rewritten } = await writeClearWebhookUrls(db);
        const before = await rowsOf(db);
        expect(await applyNext()).to.deep.equal([name]);
        await expectWebhookUrlsMasked(db, before, rewritten, secrets);
        expect(await db.all(`SELECT relname FROM pg_class WHERE relname = 'webhook_url_rewrites'`)).to.deep.equal([]);
        expect(await applyNext()).to.deep.equal([]);
      } finally {
        await db.close();
      }
    });

    it('019 (policy currency) keeps every policy as it was, with no currency: amounts of the asset, as before', async () => {
      const { db, name, applyNext } = await sharedStoreBefore('019');
      try {
        await expectPoliciesKept(db, applyNext, name);
      } finally {
        await db.close();
      }
    });
  });

  describe('event store (ClickHouse)', () => {
    // The run has one engine; these tests use their own migrations table and table names.
    const suffix = Math.random().toString(36).slice(2, 8);

    it('applies, records and skips on re-run', async () => {
      const { events } = testEnv();
      const table = `mig_${suffix}_a`;
      const dir = writeMigrations({
        '001_t.sql': `CREATE TABLE IF NOT EXISTS ${table} (id UInt32 COMMENT 'a; b') ENGINE = MergeTree ORDER BY id;\n` +
          `-- a comment; with a semicolon\nINSERT INTO ${table} VALUES (1);`,
      });
      const migrations = `schema_migrations_${suffix}_a`;
      expect(await migrateEventStore(events, dir, migrations)).to.deep.equal(['001_t.sql']);
      expect(await migrateEventStore(events, dir, migrations)).to.deep.equal([]);
      const rows = await events.query<{ n: string }>(`SELECT count() AS n FROM ${table}`);
      expect(rows).to.deep.equal([{ n: '1' }]);
    });

    it('stops with a clear message on a failing statement and does not record it', async () => {
      const { events } = testEnv();
      const dir = writeMigrations({ '001_bad.sql': 'CREATE TABLE nowhere (x NoSuchType) ENGINE = Memory;' });
      const migrations = `schema_migrations_${suffix}_b`;
      let error: unknown;
      try {
        await migrateEventStore(events, dir, migrations);
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(MigrationError);
      expect((error as Error).message).to.match(/ClickHouse migration 001_bad\.sql failed/);
      const recorded = await events.query(`SELECT name FROM ${migrations}`);
      expect(recorded).to.deep.equal([]);
    });

    it('records the project migrations in the run database', async () => {
      const { events } = testEnv();
      const rows = await events.query<{ name: string }>('SELECT name FROM schema_migrations FINAL ORDER BY version');
      const files = fs.readdirSync(path.join(SCHEMA_DIR, 'clickhouse')).filter((f) => f.endsWith('.sql')).sort();
      expect(rows.map((r) => r.name)).to.deep.equal(files);
    });
  });

  describe('splitStatements', () => {
    it('splits at semicolons outside quotes and comments', () => {
      const sql = "CREATE TABLE t (a String COMMENT 'x; y', b String DEFAULT 'it''s;');\n-- note; here\nSELECT \"a;b\";";
      expect(splitStatements(sql)).to.deep.equal([
        "CREATE TABLE t (a String COMMENT 'x; y', b String DEFAULT 'it''s;')",
        'SELECT "a;b"',
      ]);
    });
  });
});
