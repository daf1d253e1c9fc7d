/**
 * Who may run what on ClickHouse's HTTP interface for BI tools: a spendscope key with the `read`
 * scope, as the password, sees its team's rows of the spendscope database, read-only, bounded.
 *
 * The engine does the enforcing where it can, on a session the query cannot change:
 * - `additional_table_filters` puts `team_id = '<team>'` on every read of every table and view of
 *   the database (joins, subqueries, UNION, CTEs, FINAL alike), and shows only the database in
 *   `system.tables`, `system.columns` and `system.databases`;
 * - `readonly = 1`, set last, refuses every write and every change of a setting (the query's own
 *   SETTINGS clause too).
 * Everything else is an allowlist (allowlist.ts), checked on the statement as the engine itself
 * parses it, before anything of it runs:
 * 1. the engine formats the statement (`formatQuery`, a pure function: a syntax error is 62 here,
 *    as on a server), and that canonical text is what is checked and what runs, so no comment,
 *    quote or second statement can hide anything between the check and the run;
 * 2. `INTO OUTFILE` is refused in every kind of statement, before any EXPLAIN (which would write
 *    the file itself), and so is any output format not on the list;
 * 3. `EXPLAIN AST`: every kind of node, function, table function and table, as written;
 * 4. `EXPLAIN QUERY TREE`: the same as the engine resolved them (aliases, views, IN tables). It
 *    runs scalar subqueries to fold them, which is safe only because step 3 passed first.
 * The order matters: nothing that could read a file or write one ever runs, not even inside the
 * check.
 */
import type { Database } from '../stores/sql.js';
import { allows } from '../http/auth.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { findKeyOwner } from '../teams/repository.js';
import { BiAdmission, type AdmissionLimits } from './admission.js';
import {
  AGGREGATE_COMBINATORS,
  AGGREGATE_FUNCTIONS,
  AST_NODES,
  CLIENT_SETTINGS,
  FUNCTIONS,
  LIMIT_SETTINGS,
  OUTPUT_FORMATS,
  SYSTEM_TABLES,
  TABLE_FUNCTIONS,
} from './allowlist.js';
import { ClickHouseException, settingStatements, sqlString, WHOLE_DOCUMENT_FORMATS, type ClickHouseHttpPolicy, type ClickHouseRequest, type PreparedQuery } from './protocol.js';
import { hasIntoOutfile, leadingKeyword, outputFormat, singleStatement } from './statement.js';

export interface BiLimits extends Omit<AdmissionLimits, 'perHolder' | 'perTeam' | 'total'> {
  maxExecutionSeconds: number;
  maxResultRows: number;
  maxResultBytes: number;
  /** Threads one BI query may use: fewer than the machine's cores leaves the rest to ingest and the API. */
  maxThreads: number;
  /** BI queries of one key (and the keys rotated from it) running at once. */
  concurrentQueriesPerKey: number;
  /** BI queries of one team running at once. */
  concurrentQueriesPerTeam: number;
  /** BI queries of the process running at once. */
  concurrentQueries: number;
}

/** The most result a JSON or XML document may carry (uncompressed blocks): larger results stream in another format. */
export const WHOLE_DOCUMENT_MAX_BYTES = 256 * 1024 ** 2;

const STATEMENTS = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN']);

const denied = (what: string) => new ClickHouseException(497, 'ACCESS_DENIED', `${what}: a spendscope key reads its team's rows of the spendscope database only`);
const readonly = (what: string) => new ClickHouseException(164, 'READONLY', `${what}: Cannot execute query in readonly mode`);

/** What the engine says of its functions and settings (fixed for a process) and of the database's tables (changed by migrations). */
export interface EngineCatalog {
  tables(): Promise<{ name: string; hasTeam: boolean }[]>;
  /** A function's canonical name as the engine resolves what was written (an alias, another case), or the name as written. */
  functionName(written: string): Promise<string>;
  /** A setting's canonical name and default value, or undefined for a setting the engine does not know. */
  setting(name: string): Promise<{ name: string; default: string } | undefined>;
  /** Whether the engine knows a format by this name. */
  isFormat(name: string): Promise<boolean>;
}

export class TeamScopedPolicy implements ClickHouseHttpPolicy {
  private readonly admission: BiAdmission;

  constructor(
    private readonly db: Database,
    private readonly limiter: RateLimiter,
    private readonly database: string,
    private readonly limits: BiLimits,
    private readonly catalog: EngineCatalog,
  ) {
    this.admission = new BiAdmission({
      perHolder: limits.concurrentQueriesPerKey,
      perTeam: limits.concurrentQueriesPerTeam,
      total: limits.concurrentQueries,
      maxMemoryBytes: limits.maxMemoryBytes,
      totalMemoryBytes: limits.totalMemoryBytes,
    });
  }

  async prepare(request: ClickHouseRequest): Promise<PreparedQuery> {
    const owner = await findKeyOwner(this.db, request.credentials.password);
    if (!owner || !allows(owner, 'read')) {
      throw new ClickHouseException(516, 'AUTHENTICATION_FAILED', `${request.credentials.user}: Authentication failed: password is incorrect, or the key lacks the read scope`);
    }
    // One query is one request of the key's holder, in the bucket its HTTP requests draw on.
    const rate = await this.limiter.take(owner.holderId, 'requests', owner.rates, 1);
    if (rate && !rate.allowed) {
      throw new ClickHouseException(201, 'QUOTA_EXCEEDED', `This API key is over its limit of ${rate.rate} requests a second; retry after ${rate.retryAfterSeconds} s`);
    }
    const statement = singleStatement(request.sql);
    if (request.database !== undefined && request.database !== this.database) throw denied(`Database ${request.database}`);
    await this.checkFormat(request.format);
    const settings = await this.clientSettings(request.settings);
    if (WHOLE_DOCUMENT_FORMATS.has(outputFormat(statement) ?? request.format)) {
      // Answered whole (protocol.ts), so held in memory: bounded well below a streamed result.
      settings.max_result_bytes = String(Math.min(Number(settings.max_result_bytes), WHOLE_DOCUMENT_MAX_BYTES));
    }
    const place = this.admission.admit(owner.holderId, owner.teamId);
    try {
      settings.max_memory_usage = String(Math.min(Number(settings.max_memory_usage), place.memoryBytes));
      const team = sqlString(owner.teamId);
      const filters = (await this.catalog.tables()).map(({ name, hasTeam }) => `${sqlString(`${this.database}.${name}`)}: ${sqlString(hasTeam ? `team_id = ${team}` : '0')}`);
      filters.push(`'system.tables': ${sqlString(`database = ${sqlString(this.database)}`)}`);
      filters.push(`'system.columns': ${sqlString(`database = ${sqlString(this.database)}`)}`);
      filters.push(`'system.databases': ${sqlString(`name = ${sqlString(this.database)}`)}`);
      return {
        setup: [
          `USE ${this.database}`,
          // The lowest CPU priority for the engine's threads of this query: it takes what ingest and
          // the API leave (on 2 cores, ingest beside four heavy queries kept 0.6 of its requests/s instead of 0.2).
          'SET os_thread_priority = 19',
          // As a server parses: a bare expression is a syntax error, not a SELECT (clickhouse-local's default).
          'SET implicit_select = 0',
          `SET additional_table_filters = {${filters.join(', ')}}`,
          ...settingStatements(settings),
          "SET result_overflow_mode = 'throw'",
          // Last: from here on the session's settings cannot change.
          'SET readonly = 1',
        ],
        check: (run) => this.check(run, statement),
        release: place.release,
      };
    } catch (err) {
      place.release();
      throw err;
    }
  }

  /** A format the result may be written in: on the list; an unknown one refused as a server refuses it. */
  private async checkFormat(format: string): Promise<void> {
    if (OUTPUT_FORMATS.has(format)) return;
    if (!(await this.catalog.isFormat(format))) throw new ClickHouseException(73, 'UNKNOWN_FORMAT', `Unknown format ${format}`);
    throw denied(`Format ${format} (it may read files or reach the network)`);
  }

  /**
   * Settings as a readonly ClickHouse user may send them: a listed output setting as asked, a
   * limit at most ours, any other known setting only at the value it has (115 for an unknown one,
   * 164 for a change).
   */
  private async clientSettings(asked: Record<string, string>): Promise<Record<string, string>> {
    const ours: Record<(typeof LIMIT_SETTINGS)[number], number> = {
      max_execution_time: this.limits.maxExecutionSeconds,
      max_result_rows: this.limits.maxResultRows,
      max_result_bytes: this.limits.maxResultBytes,
      max_memory_usage: this.limits.maxMemoryBytes,
      max_threads: this.limits.maxThreads,
    };
    const settings: Record<string, string> = {};
    for (const [asName, value] of Object.entries(asked)) {
      const known = await this.catalog.setting(asName);
      if (!known) throw new ClickHouseException(115, 'UNKNOWN_SETTING', `Unknown setting '${asName}'`);
      const { name } = known;
      if (name === 'readonly' && (value === '1' || value === '2')) continue;
      if ((LIMIT_SETTINGS as readonly string[]).includes(name)) {
        const n = Number(value);
        const limit = name as (typeof LIMIT_SETTINGS)[number];
        if (Number.isFinite(n) && n > 0 && n < ours[limit]) ours[limit] = n;
        continue;
      }
      if (CLIENT_SETTINGS.has(name)) settings[name] = value;
      else if (!sameSettingValue(value, known.default)) throw new ClickHouseException(164, 'READONLY', `Cannot modify '${asName}' setting in readonly mode`);
    }
    for (const [name, value] of Object.entries(ours)) settings[name] = String(value);
    return settings;
  }

  /**
   * The statement as the engine formats it, checked; what the session runs. The engine's own
   * formatting is pure (it parses and prints), so it is safe to ask for before anything is known.
   */
  private async check(run: (sql: string) => Promise<string>, statement: string): Promise<string> {
    const canonical = Buffer.from((await run(`SELECT base64Encode(formatQuery(${sqlString(statement)}))`)).trim(), 'base64').toString('utf8');
    const keyword = leadingKeyword(canonical);
    if (!STATEMENTS.has(keyword)) throw readonly(keyword || 'This statement');
    if (hasIntoOutfile(canonical)) throw denied('INTO OUTFILE');
    const format = outputFormat(canonical);
    if (format !== undefined) await this.checkFormat(format);
    if (keyword === 'SELECT' || keyword === 'WITH') await this.checkReads(run, canonical);
    else if (keyword === 'EXPLAIN') {
      const inner = /^EXPLAIN(?:\s+(?:AST|SYNTAX|QUERY\s+TREE|PLAN|PIPELINE|ESTIMATE))?(?:\s+\w+\s*=\s*\w+(?:\s*,\s*\w+\s*=\s*\w+)*)?\s+((?:SELECT|WITH|\()[\s\S]*)$/i.exec(canonical);
      if (!inner) throw denied('This EXPLAIN');
      await this.checkReads(run, inner[1]!);
    } else this.checkCatalogStatement(keyword, canonical);
    return canonical;
  }

  /** SHOW, DESCRIBE and EXISTS: of the database's tables or the catalog's, nothing else. */
  private checkCatalogStatement(keyword: string, statement: string): void {
    const body = statement.replace(/\s+FORMAT\s+\w+\s*$/i, '');
    if (keyword === 'SHOW') {
      const tables = /^SHOW\s+(?:FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+(\S+))?/i.exec(body);
      if (tables) {
        if (tables[1] !== undefined && unquote(tables[1]) !== this.database) throw denied(`Database ${unquote(tables[1])}`);
        return;
      }
      if (/^SHOW\s+DATABASES\b/i.test(body)) return;
      const named = /^SHOW\s+(?:(?:FULL\s+)?(?:EXTENDED\s+)?COLUMNS\s+(?:FROM|IN)|CREATE(?:\s+TABLE|\s+VIEW)?)\s+([\w.`"]+)(?:\s+(?:FROM|IN)\s+(\S+))?\s*$/i.exec(body);
      if (named) {
        this.checkNamedTable(named[2] === undefined ? named[1]! : `${named[2]}.${named[1]}`);
        return;
      }
      throw denied('This SHOW');
    }
    // DESCRIBE, DESC, EXISTS: of a named table of the database.
    const named = /^(?:DESCRIBE|DESC|EXISTS)\s+(?:TEMPORARY\s+)?(?:TABLE\s+|VIEW\s+)?([\w.`"]+)\s*$/i.exec(body);
    if (!named) throw denied(`This ${keyword}`);
    this.checkNamedTable(named[1]!);
  }

  private checkNamedTable(name: string): void {
    const parts = splitName(name);
    if (parts.length === 1) return;
    const [db, table] = parts as [string, string];
    if (db === this.database || (db === 'system' && SYSTEM_TABLES.has(table))) return;
    throw denied(`Table ${db}.${table}`);
  }

  /** A function on the list, by the name the engine resolves it to; an aggregate with combinators by its base. */
  private async checkFunction(written: string): Promise<void> {
    const name = await this.catalog.functionName(written);
    if (FUNCTIONS.has(name) || AGGREGATE_FUNCTIONS.has(name)) return;
    for (const combinator of AGGREGATE_COMBINATORS) {
      if (written.length > combinator.length && written.endsWith(combinator)) {
        const base = written.slice(0, -combinator.length);
        if (AGGREGATE_FUNCTIONS.has(await this.catalog.functionName(base))) return;
        // Combinators chain (sumIfState): strip the next one.
        if (AGGREGATE_COMBINATORS.some((c) => base.endsWith(c))) {
          try {
            await this.checkFunction(base);
            return;
          } catch {
            // Not an aggregate with that chain either: refused below.
          }
        }
      }
    }
    throw denied(`Function ${written}`);
  }

  /**
   * Every function, table function and table the query uses must be allowed, found twice: in the
   * syntax tree (`EXPLAIN AST`: as written, every subquery, CTE and scalar included; first, because
   * nothing of it has run yet) and in the resolved tree (`EXPLAIN QUERY TREE`: tables reached
   * through IN and views, and names as the engine resolved them).
   */
  private async checkReads(run: (sql: string) => Promise<string>, query: string): Promise<void> {
    const statement = query.replace(/\s+FORMAT\s+\w+\s*$/i, '');
    await this.checkSyntaxTree(await run(`EXPLAIN AST ${statement}`));
    const tree = await run(`EXPLAIN QUERY TREE ${statement}`);
    for (const match of tree.matchAll(/\bTABLE id: \d+,(?: alias: [^,]+,)? table_name: ([^\s,]+)/g)) this.checkNamedTable(match[1]!);
    for (const match of tree.matchAll(/\bTABLE_FUNCTION id: \d+,(?: alias: [^,]+,)? table_function_name: (\w+)/g)) {
      if (!TABLE_FUNCTIONS.has(match[1]!)) throw denied(`Table function ${match[1]}`);
    }
    for (const match of tree.matchAll(/\bFUNCTION id: \d+, function_name: (\w+)/g)) await this.checkFunction(match[1]!);
  }

  /** The nodes of an `EXPLAIN AST` (one space of indent a level): each kind, function and table on the lists. */
  private async checkSyntaxTree(ast: string): Promise<void> {
    const lines = ast
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => ({ depth: line.length - line.trimStart().length, text: line.trim() }));
    for (let i = 0; i < lines.length; i++) {
      const { depth, text } = lines[i]!;
      const kind = /^\w+/.exec(text)?.[0] ?? '';
      if (!AST_NODES.has(kind)) throw denied(`This statement (${kind || text})`);
      const table = /^TableIdentifier (\S+)/.exec(text);
      if (table) this.checkNamedTable(table[1]!);
      const fn = /^Function (\w+)/.exec(text);
      if (!fn) continue;
      const name = fn[1]!;
      const parent = lines.slice(0, i).reverse().find((l) => l.depth < depth);
      if (parent?.text.startsWith('TableExpression')) {
        if (!TABLE_FUNCTIONS.has(name)) throw denied(`Table function ${name}`);
        continue;
      }
      await this.checkFunction(name);
      if (IN_FUNCTIONS.has(name)) {
        // `x IN db.table`: the right side names a table.
        for (let j = i + 1; j < lines.length && lines[j]!.depth > depth; j++) {
          const identifier = lines[j]!.depth === depth + 2 ? /^Identifier (\S+\.\S+)/.exec(lines[j]!.text) : null;
          if (identifier) this.checkNamedTable(identifier[1]!);
        }
      }
    }
  }
}

/** Whether a setting sent as text is the value it has (ClickHouse lets a readonly user send that). */
function sameSettingValue(sent: string, current: string): boolean {
  const normal = (v: string) => ({ true: '1', false: '0' })[v.toLowerCase()] ?? v;
  return normal(sent) === normal(current);
}

/** Functions whose right side may name a table. */
const IN_FUNCTIONS = new Set(['in', 'notIn', 'globalIn', 'globalNotIn', 'nullIn', 'notNullIn', 'globalNullIn', 'globalNotNullIn']);

function unquote(name: string): string {
  return name.replace(/^[`"](.*)[`"]$/, '$1');
}

function splitName(name: string): string[] {
  return (name.match(/`[^`]*`|"[^"]*"|[^.]+/g) ?? []).map(unquote);
}

type Query = <Row>(sql: string, params?: Record<string, unknown>) => Promise<Row[]>;

/**
 * The engine's catalog, read through `query`: the database's tables and views and whether each
 * has team_id (kept a minute: only migrations change them), and the engine's functions and
 * settings (read once: they are the engine's, fixed for the process).
 */
export function engineCatalog(query: Query, database: string): EngineCatalog {
  let cached: { at: number; tables: { name: string; hasTeam: boolean }[] } | undefined;
  let functions: Promise<{ exact: Map<string, string>; anyCase: Map<string, string> }> | undefined;
  let settings: Promise<Map<string, { name: string; default: string }>> | undefined;
  let formats: Promise<Set<string>> | undefined;
  const functionNames = async () => {
    const rows = await query<{ name: string; case_insensitive: number; alias_to: string }>('SELECT name, case_insensitive, alias_to FROM system.functions');
    const exact = new Map<string, string>();
    const anyCase = new Map<string, string>();
    for (const { name, case_insensitive, alias_to } of rows) {
      exact.set(name, alias_to || name);
      if (Number(case_insensitive)) anyCase.set(name.toLowerCase(), alias_to || name);
    }
    // An alias of an alias: follow it to the end.
    for (const [name, to] of exact) exact.set(name, exact.get(to) ?? to);
    for (const [name, to] of anyCase) anyCase.set(name, exact.get(to) ?? to);
    return { exact, anyCase };
  };
  const settingDefaults = async () => {
    const rows = await query<{ name: string; default: string; alias_for: string }>('SELECT name, default, alias_for FROM system.settings');
    const byName = new Map(rows.map((r) => [r.name, r] as const));
    return new Map(rows.map((r) => [r.name, { name: r.alias_for || r.name, default: byName.get(r.alias_for)?.default ?? r.default }] as const));
  };
  return {
    async tables() {
      if (cached && Date.now() - cached.at < 60_000) return cached.tables;
      const tables = await query<{ name: string }>('SELECT name FROM system.tables WHERE database = {db:String}', { db: database });
      const withTeam = new Set(
        (await query<{ table: string }>("SELECT table FROM system.columns WHERE database = {db:String} AND name = 'team_id'", { db: database })).map((r) => r.table),
      );
      cached = { at: Date.now(), tables: tables.map((t) => ({ name: t.name, hasTeam: withTeam.has(t.name) })) };
      return cached.tables;
    },
    async functionName(written) {
      const { exact, anyCase } = await (functions ??= functionNames().catch((err: unknown) => {
        functions = undefined;
        throw err;
      }));
      return exact.get(written) ?? anyCase.get(written.toLowerCase()) ?? written;
    },
    async isFormat(name) {
      formats ??= query<{ name: string }>('SELECT name FROM system.formats').then(
        (rows) => new Set(rows.map((r) => r.name)),
        (err: unknown) => {
          formats = undefined;
          throw err;
        },
      );
      return (await formats).has(name);
    },
    async setting(name) {
      return (
        await (settings ??= settingDefaults().catch((err: unknown) => {
          settings = undefined;
          throw err;
        }))
      ).get(name);
    },
  };
}
