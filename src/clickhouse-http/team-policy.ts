/**
 * Who may run what on ClickHouse's HTTP interface for BI tools: a spendscope key with the `read`
 * scope, as the password, sees its team's rows of the spendscope database, read-only, bounded.
 *
 * The engine does the enforcing where it can, on a session the query cannot change:
 * - `additional_table_filters` puts `team_id = '<team>'` on every read of every table and view of
 *   the database (joins, subqueries, UNION, CTEs, FINAL alike), and shows only the database in
 *   `system.tables`, `system.columns` and `system.databases`;
 * - `readonly = 1`, set last, refuses every write, every change of a setting (the query's own
 *   SETTINGS clause too) and the table functions that reach files or the network.
 * What the engine cannot refuse by setting, reading another database, another system table or a
 * table function such as `merge()`, is found in the query as the engine parses and resolves it
 * (`EXPLAIN AST` and `EXPLAIN QUERY TREE`: every table and table function the query reads,
 * through CTEs, views, IN and scalar subqueries) and refused before it runs.
 */
import type { Registry } from '../stores/sqlite.js';
import { allows } from '../http/auth.js';
import { findKeyOwner } from '../teams/repository.js';
import { singleStatement } from './statement.js';
import { ClickHouseException, leadingKeyword, settingStatements, sqlString, type ClickHouseHttpPolicy, type ClickHouseRequest, type PreparedQuery } from './protocol.js';

export interface BiLimits {
  maxExecutionSeconds: number;
  maxResultRows: number;
  maxResultBytes: number;
  maxMemoryBytes: number;
  /** Threads one BI query may use: fewer than the machine's cores leaves the rest to ingest and the API. */
  maxThreads: number;
  /** BI queries of one key running at once. */
  concurrentQueriesPerKey: number;
}

/** System tables a client reads to find its way (catalog, settings, functions), none with data of a team. */
const CATALOG_TABLES = new Set([
  'one',
  'numbers',
  'numbers_mt',
  'zeros',
  'zeros_mt',
  'tables',
  'columns',
  'databases',
  'settings',
  'functions',
  'table_functions',
  'data_type_families',
  'formats',
  'time_zones',
  'collations',
  'build_options',
]);

/** Table functions that read nothing but what the query gives them. */
const HARMLESS_TABLE_FUNCTIONS = new Set(['numbers', 'numbers_mt', 'zeros', 'zeros_mt', 'generate_series', 'generateSeries', 'values', 'null', 'generateRandom']);

/** Functions that read a table or dictionary named in their arguments. */
const TABLE_READING_FUNCTIONS = /^(joinGet|joinGetOrNull|dictGet\w*|dictHas|dictIsIn)$/;

const STATEMENTS = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN']);

/** Settings a client may choose: how its result is written, nothing about what it may read. */
const CLIENT_SETTING = /^(output_format_\w+|format_\w+|date_time_output_format|extremes|max_block_size|session_timezone)$/;
/** Limits a client may lower, never raise. */
const LIMIT_SETTINGS = ['max_execution_time', 'max_result_rows', 'max_result_bytes', 'max_memory_usage', 'max_threads'] as const;

const denied = (what: string) => new ClickHouseException(497, 'ACCESS_DENIED', `${what}: a spendscope key reads its team's rows of the spendscope database only`);
const readonly = (what: string) => new ClickHouseException(164, 'READONLY', `${what}: Cannot execute query in readonly mode`);

export class TeamScopedPolicy implements ClickHouseHttpPolicy {
  private readonly running = new Map<string, number>();

  constructor(
    private readonly registry: Registry,
    private readonly database: string,
    private readonly limits: BiLimits,
    /** The database's tables and views, and whether each has a team_id column. */
    private readonly tables: () => Promise<{ name: string; hasTeam: boolean }[]>,
  ) {}

  async prepare(request: ClickHouseRequest): Promise<PreparedQuery> {
    const owner = findKeyOwner(this.registry, request.credentials.password);
    if (!owner || !allows(owner, 'read')) {
      throw new ClickHouseException(516, 'AUTHENTICATION_FAILED', `${request.credentials.user}: Authentication failed: password is incorrect, or the key lacks the read scope`);
    }
    const statement = singleStatement(request.sql);
    const keyword = leadingKeyword(statement);
    if (!STATEMENTS.has(keyword)) throw readonly(keyword || 'This statement');
    if (request.database !== undefined && request.database !== this.database) throw denied(`Database ${request.database}`);
    const settings = this.clientSettings(request.settings);
    const check = this.checkerFor(keyword, statement);

    const running = this.running.get(owner.keyId) ?? 0;
    if (running >= this.limits.concurrentQueriesPerKey) {
      throw new ClickHouseException(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', `Too many simultaneous queries for this key. Maximum: ${this.limits.concurrentQueriesPerKey}`);
    }
    this.running.set(owner.keyId, running + 1);
    const release = () => {
      const left = (this.running.get(owner.keyId) ?? 1) - 1;
      if (left > 0) this.running.set(owner.keyId, left);
      else this.running.delete(owner.keyId);
    };
    try {
      const team = sqlString(owner.teamId);
      const filters = (await this.tables()).map(({ name, hasTeam }) => `${sqlString(`${this.database}.${name}`)}: ${sqlString(hasTeam ? `team_id = ${team}` : '0')}`);
      filters.push(`'system.tables': ${sqlString(`database = ${sqlString(this.database)}`)}`);
      filters.push(`'system.columns': ${sqlString(`database = ${sqlString(this.database)}`)}`);
      filters.push(`'system.databases': ${sqlString(`name = ${sqlString(this.database)}`)}`);
      return {
        setup: [
          `USE ${this.database}`,
          `SET additional_table_filters = {${filters.join(', ')}}`,
          ...settingStatements(settings),
          "SET result_overflow_mode = 'throw'",
          // Last: from here on the session's settings cannot change.
          'SET readonly = 1',
        ],
        check,
        release,
      };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Format settings as asked; limits at most ours; anything else is refused as a readonly server does. */
  private clientSettings(asked: Record<string, string>): Record<string, string> {
    const ours: Record<(typeof LIMIT_SETTINGS)[number], number> = {
      max_execution_time: this.limits.maxExecutionSeconds,
      max_result_rows: this.limits.maxResultRows,
      max_result_bytes: this.limits.maxResultBytes,
      max_memory_usage: this.limits.maxMemoryBytes,
      max_threads: this.limits.maxThreads,
    };
    const settings: Record<string, string> = {};
    for (const [name, value] of Object.entries(asked)) {
      if (name === 'readonly' && (value === '1' || value === '2')) continue;
      if ((LIMIT_SETTINGS as readonly string[]).includes(name)) {
        const n = Number(value);
        const limit = name as (typeof LIMIT_SETTINGS)[number];
        if (Number.isFinite(n) && n > 0 && n < ours[limit]) ours[limit] = n;
        continue;
      }
      if (!CLIENT_SETTING.test(name)) throw new ClickHouseException(164, 'READONLY', `Cannot modify '${name}' setting in readonly mode`);
      settings[name] = value;
    }
    for (const [name, value] of Object.entries(ours)) settings[name] = String(value);
    return settings;
  }

  /** How a statement of this kind is checked against the tables it reads. */
  private checkerFor(keyword: string, statement: string): PreparedQuery['check'] {
    if (keyword === 'SELECT' || keyword === 'WITH') return (run) => this.checkReads(run, statement);
    if (keyword === 'EXPLAIN') {
      const inner = /^\s*EXPLAIN\s+(?:(?:AST|SYNTAX|QUERY\s+TREE|PLAN|PIPELINE)\s+)?((?:SELECT|WITH|\()[\s\S]*)$/i.exec(statement);
      if (!inner) throw denied('This EXPLAIN');
      return (run) => this.checkReads(run, inner[1]!);
    }
    if (keyword === 'SHOW') {
      const tables = /^\s*SHOW\s+(?:FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+(\S+))?/i.exec(statement);
      if (tables) {
        if (tables[1] !== undefined && unquote(tables[1]) !== this.database) throw denied(`Database ${unquote(tables[1])}`);
        return undefined;
      }
      if (/^\s*SHOW\s+DATABASES\b/i.test(statement)) return undefined;
      const named = /^\s*SHOW\s+(?:(?:FULL\s+)?(?:EXTENDED\s+)?COLUMNS\s+(?:FROM|IN)|CREATE(?:\s+TABLE|\s+VIEW)?)\s+([\w.`"]+)(?:\s+(?:FROM|IN)\s+(\S+))?/i.exec(statement);
      if (named) {
        this.checkNamedTable(named[2] === undefined ? named[1]! : `${named[2]}.${named[1]}`);
        return undefined;
      }
      throw denied('This SHOW');
    }
    // DESCRIBE, DESC, EXISTS: of a named table of the database.
    const named = /^\s*(?:DESCRIBE|DESC|EXISTS)\s+(?:TEMPORARY\s+)?(?:TABLE\s+|VIEW\s+)?([\w.`"]+)\s*$/i.exec(statement);
    if (!named) throw denied(`This ${keyword}`);
    this.checkNamedTable(named[1]!);
    return undefined;
  }

  private checkNamedTable(name: string): void {
    const parts = splitName(name);
    if (parts.length === 1) return;
    const [db, table] = parts as [string, string];
    if (db === this.database || (db === 'system' && CATALOG_TABLES.has(table))) return;
    throw denied(`Table ${db}.${table}`);
  }

  /**
   * Every table and table function the query reads must be allowed, found twice: in the syntax
   * tree (`EXPLAIN AST`: every table expression of every subquery, CTE and scalar, as written; the
   * analyzer folds a scalar subquery's tree away once it has run it) and in the resolved tree
   * (`EXPLAIN QUERY TREE`: tables reached through IN and views, as the engine will read them).
   */
  private async checkReads(run: (sql: string) => Promise<string>, statement: string): Promise<void> {
    const query = statement.replace(/\s+FORMAT\s+\w+\s*$/i, '');
    this.checkSyntaxTree(await run(`EXPLAIN AST ${query}`));
    const tree = await run(`EXPLAIN QUERY TREE ${query}`);
    for (const match of tree.matchAll(/\bTABLE id: \d+,(?: alias: [^,]+,)? table_name: ([^\s,]+)/g)) this.checkNamedTable(match[1]!);
    for (const match of tree.matchAll(/\bTABLE_FUNCTION id: \d+,(?: alias: [^,]+,)? table_function_name: (\w+)/g)) {
      if (!HARMLESS_TABLE_FUNCTIONS.has(match[1]!)) throw denied(`Table function ${match[1]}`);
    }
    for (const match of tree.matchAll(/\bFUNCTION id: \d+, function_name: (\w+)/g)) {
      if (TABLE_READING_FUNCTIONS.test(match[1]!)) throw denied(`Function ${match[1]}`);
    }
  }

  /** The tables, table functions and IN tables of an `EXPLAIN AST` (one space of indent a level). */
  private checkSyntaxTree(ast: string): void {
    const lines = ast.split('\n').map((line) => ({ depth: line.length - line.trimStart().length, text: line.trim() }));
    lines.forEach(({ depth, text }, i) => {
      const table = /^TableIdentifier (\S+)/.exec(text);
      if (table) this.checkNamedTable(table[1]!);
      const fn = /^Function (\w+)/.exec(text);
      if (!fn) return;
      const name = fn[1]!;
      if (TABLE_READING_FUNCTIONS.test(name)) throw denied(`Function ${name}`);
      const parent = lines.slice(0, i).reverse().find((l) => l.depth < depth);
      if (parent?.text.startsWith('TableExpression') && !HARMLESS_TABLE_FUNCTIONS.has(name)) throw denied(`Table function ${name}`);
      if (IN_FUNCTIONS.has(name)) {
        // `x IN db.table`: the right side names a table.
        for (let j = i + 1; j < lines.length && lines[j]!.depth > depth; j++) {
          const identifier = lines[j]!.depth === depth + 2 ? /^Identifier (\S+\.\S+)/.exec(lines[j]!.text) : null;
          if (identifier) this.checkNamedTable(identifier[1]!);
        }
      }
    });
  }
}

/** Functions whose right side may name a table. */
const IN_FUNCTIONS = new Set(['in', 'notIn', 'globalIn', 'globalNotIn', 'nullIn', 'notNullIn', 'globalNullIn', 'globalNotNullIn']);

function unquote(name: string): string {
  return name.replace(/^[`"](.*)[`"]$/, '$1');
}

function splitName(name: string): string[] {
  return (name.match(/`[^`]*`|"[^"]*"|[^.]+/g) ?? []).map(unquote);
}

/** The database's tables and views and whether each has team_id, read from the engine (kept a minute: only migrations change them). */
export function databaseTables(
  query: <Row>(sql: string, params?: Record<string, unknown>) => Promise<Row[]>,
  database: string,
): () => Promise<{ name: string; hasTeam: boolean }[]> {
  let cached: { at: number; tables: { name: string; hasTeam: boolean }[] } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < 60_000) return cached.tables;
    const tables = await query<{ name: string }>('SELECT name FROM system.tables WHERE database = {db:String}', { db: database });
    const withTeam = new Set(
      (await query<{ table: string }>("SELECT table FROM system.columns WHERE database = {db:String} AND name = 'team_id'", { db: database })).map((r) => r.table),
    );
    cached = { at: Date.now(), tables: tables.map((t) => ({ name: t.name, hasTeam: withTeam.has(t.name) })) };
    return cached.tables;
  };
}
