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
 * Everything else is an allowlist (allowlist.ts), checked by one walk of every statement, of
 * every kind, as the engine itself parses it, before anything of it runs (walk.ts). Sessions run
 * without introspection functions.
 */
import type { Database } from '../stores/sql.js';
import { allows, TEAM_SUSPENDED_MESSAGE } from '../http/auth.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { findKeyOwner } from '../teams/repository.js';
import type { BiLimits } from '../config.js';
import { BiAdmission } from './admission.js';
import { CLIENT_SETTINGS, LIMIT_SETTINGS } from './allowlist.js';
import type { EngineCatalog } from './catalog.js';
import { accessDenied } from './exception.js';
import { ClickHouseException, settingStatements, sqlString, WHOLE_DOCUMENT_FORMATS, type ClickHouseHttpPolicy, type ClickHouseRequest, type PreparedQuery } from './protocol.js';
import { outputFormat, singleStatement } from './statement.js';
import { StatementWalk } from './walk.js';

export { engineCatalog } from './catalog.js';
export type { BiLimits };

/** The longest statement taken, as a ClickHouse server's default max_query_size. */
const MAX_QUERY_BYTES = 262_144;

/** The most result a JSON or XML document may carry (uncompressed blocks): larger results stream in another format. */
export const WHOLE_DOCUMENT_MAX_BYTES = 256 * 1024 ** 2;

export class TeamScopedPolicy implements ClickHouseHttpPolicy {
  private readonly admission: BiAdmission;
  private readonly walk: StatementWalk;

  constructor(
    private readonly db: Database,
    private readonly limiter: RateLimiter,
    private readonly database: string,
    private readonly limits: BiLimits,
    private readonly catalog: EngineCatalog,
  ) {
    this.walk = new StatementWalk(catalog, database);
    this.admission = new BiAdmission({
      perHolder: limits.concurrentQueriesPerKey,
      perTeam: limits.concurrentQueriesPerTeam,
      total: limits.concurrentQueries,
      maxMemoryBytes: limits.maxMemoryBytes,
      totalMemoryBytes: limits.totalMemoryBytes,
      ...(limits.queueWaitMs === undefined ? {} : { queueWaitMs: limits.queueWaitMs }),
    });
  }

  async prepare(request: ClickHouseRequest): Promise<PreparedQuery> {
    const owner = await findKeyOwner(this.db, request.credentials.password);
    // ACCESS_DENIED is a 403, as the REST answer; the message carries the REST code for scripts that read both.
    if (owner?.suspended) throw new ClickHouseException(497, 'ACCESS_DENIED', `team_suspended: ${TEAM_SUSPENDED_MESSAGE}`);
    if (!owner || !allows(owner, 'read')) {
      throw new ClickHouseException(516, 'AUTHENTICATION_FAILED', `${request.credentials.user}: Authentication failed: password is incorrect, or the key lacks the read scope`);
    }
    // One query is one request of the key's holder, in the bucket its HTTP requests draw on.
    const rate = await this.limiter.take(owner.holderId, 'requests', owner.rates, 1);
    if (rate && !rate.allowed) {
      throw new ClickHouseException(201, 'QUOTA_EXCEEDED', `This API key is over its limit of ${rate.rate} requests a second; retry after ${rate.retryAfterSeconds} s`);
    }
    // As a server's max_query_size: the text is read before the engine sees it, and reading is linear in it.
    if (Buffer.byteLength(request.sql) > MAX_QUERY_BYTES) throw new ClickHouseException(62, 'SYNTAX_ERROR', `Max query size exceeded (${MAX_QUERY_BYTES} bytes)`);
    const statement = singleStatement(request.sql);
    if (request.database !== undefined && request.database !== this.database) throw accessDenied(`Database ${request.database}`);
    await this.walk.checkFormat(request.format);
    const settings = await this.clientSettings(request.settings);
    if (WHOLE_DOCUMENT_FORMATS.has(outputFormat(statement) ?? request.format)) {
      // Answered whole (protocol.ts), so held in memory: bounded well below a streamed result.
      settings.max_result_bytes = String(Math.min(Number(settings.max_result_bytes), WHOLE_DOCUMENT_MAX_BYTES));
    }
    const place = await this.admission.admit(owner.holderId, owner.teamId);
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
          // The team filter before any condition of the query: a condition moved ahead of it into
          // PREWHERE, or evaluated on rows the filter drops, could throw with another team's value.
          'SET optimize_move_to_prewhere = 0',
          'SET optimize_move_to_prewhere_if_final = 0',
          'SET query_plan_optimize_prewhere = 0',
          "SET short_circuit_function_evaluation = 'force_enable'",
          // Rows and bytes read count other teams' rows in the granules read: no statistics.
          'SET output_format_write_statistics = 0',
          // Symbols and addresses of the process are none of a tenant's business.
          'SET allow_introspection_functions = 0',
          // Last: from here on the session's settings cannot change.
          'SET readonly = 1',
        ],
        check: (run) => this.walk.check(run, statement),
        hideReadCounts: true,
        release: place.release,
      };
    } catch (err) {
      place.release();
      throw err;
    }
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

}

/** Whether a setting sent as text is the value it has (ClickHouse lets a readonly user send that). */
function sameSettingValue(sent: string, current: string): boolean {
  const normal = (v: string) => ({ true: '1', false: '0' })[v.toLowerCase()] ?? v;
  return normal(sent) === normal(current);
}

