/**
 * Statements for the BI interface built from its grammar, not from memory: every kind of statement
 * it takes × every place an expression or a table stands in that kind × a set of things a read key
 * must never reach. Each is a statement the engine parses (the tests check that first), so a
 * refusal is the policy's, never a syntax error's.
 */

/** Something a read key must not reach, as an expression and as a table. */
export interface Forbidden {
  name: string;
  /** A scalar expression that uses it. */
  expr: string;
  /** A table expression that uses it (FROM, JOIN, DESCRIBE). */
  table: string;
  /** A statement kind's extra forms that carry it by a query parameter: [sql, params]. */
  byParameter?: [string, Record<string, string>][];
}

export function forbiddenThings(canaryFile: string): Forbidden[] {
  return [
    {
      name: 'file()',
      expr: `file('${canaryFile}')`,
      table: `file('${canaryFile}', 'LineAsString')`,
      byParameter: [['SELECT file({p:String})', { param_p: canaryFile }]],
    },
    { name: 'a denied table function', expr: "(SELECT any(c1) FROM url('http://127.0.0.1:9/x', 'CSV', 'c1 String'))", table: "url('http://127.0.0.1:9/x', 'CSV', 'c1 String')" },
    {
      name: 'a system table',
      expr: '(SELECT count() FROM system.processes)',
      table: 'system.processes',
      byParameter: [['SELECT count() FROM {t:Identifier}', { param_t: 'system.processes' }]],
    },
    { name: 'hostName', expr: 'hostName()', table: '(SELECT hostName() AS h)' },
    { name: 'sleepEachRow', expr: 'sleepEachRow(1)', table: '(SELECT sleepEachRow(1) AS s)' },
  ];
}

/** Places of a query where an expression (X) or a table (T) stands. */
const QUERY_POSITIONS: [string, (x: string, t: string) => string][] = [
  ['the projection', (x) => `SELECT ${x} AS v`],
  ['WHERE', (x) => `SELECT count() FROM events WHERE toString(${x}) != ''`],
  ['LIKE', (x) => `SELECT count() FROM events WHERE agent_id LIKE toString(${x})`],
  ['LIMIT', (x) => `SELECT agent_id FROM events LIMIT toUInt64(length(toString(${x})))`],
  ['OFFSET', (x) => `SELECT agent_id FROM events LIMIT 1 OFFSET toUInt64(length(toString(${x})))`],
  ['LIMIT BY', (x) => `SELECT agent_id FROM events LIMIT 1 BY toString(${x})`],
  ['ORDER BY', (x) => `SELECT agent_id FROM events ORDER BY toString(${x})`],
  ['GROUP BY', (x) => `SELECT count() FROM events GROUP BY toString(${x})`],
  ['HAVING', (x) => `SELECT agent_id FROM events GROUP BY agent_id HAVING toString(${x}) != ''`],
  ['JOIN ON', (x) => `SELECT count() FROM events AS a JOIN events AS b ON a.id = b.id AND toString(${x}) != ''`],
  ['a joined table', (_x, t) => `SELECT count() FROM events AS a CROSS JOIN ${t} AS b`],
  ['FROM', (_x, t) => `SELECT count() FROM ${t} AS f`],
  ['a window frame', (x) => `SELECT sum(1) OVER (ORDER BY created_at ROWS BETWEEN toUInt64(length(toString(${x}))) PRECEDING AND CURRENT ROW) FROM events`],
  ['a window partition', (x) => `SELECT count() OVER (PARTITION BY toString(${x})) FROM events`],
  ['a scalar subquery', (x) => `SELECT (SELECT ${x}) AS v`],
  ['an IN subquery', (x) => `SELECT count() FROM events WHERE agent_id IN (SELECT toString(${x}))`],
  ['a subquery in FROM', (x) => `SELECT * FROM (SELECT ${x} AS v)`],
  ['a lambda', (x) => `SELECT arrayMap(v -> toString(${x}), [1]) AS a`],
];

/** Kinds of statement that hold a query, each wrapping one built at a position. */
const QUERY_KINDS: [string, (query: string, x: string) => string][] = [
  ['SELECT', (q) => q],
  ['WITH (a scalar)', (q, x) => `WITH (SELECT ${x}) AS w ${q}`],
  ['WITH (a CTE)', (q) => `WITH c AS (${q}) SELECT * FROM c`],
  ['UNION', (q) => `SELECT 1 UNION ALL ${q}`],
  ['INTERSECT', (q) => `SELECT 1 INTERSECT ${q}`],
  ['EXCEPT', (q) => `SELECT 1 EXCEPT ${q}`],
  ['EXPLAIN', (q) => `EXPLAIN ${q}`],
  ['EXPLAIN PLAN', (q) => `EXPLAIN PLAN header = 1 ${q}`],
  ['EXPLAIN AST', (q) => `EXPLAIN AST ${q}`],
  ['EXPLAIN SYNTAX', (q) => `EXPLAIN SYNTAX ${q}`],
  ['EXPLAIN QUERY TREE', (q) => `EXPLAIN QUERY TREE ${q}`],
  ['EXPLAIN PIPELINE', (q) => `EXPLAIN PIPELINE ${q}`],
  ['EXPLAIN ESTIMATE', (q) => `EXPLAIN ESTIMATE ${q}`],
  ['DESCRIBE (a query)', (q) => `DESCRIBE (${q})`],
];

/** The SHOW forms, DESCRIBE and EXISTS, at each of their places. */
const CATALOG_FORMS: [string, (x: string, t: string) => string][] = [
  ['SHOW TABLES WHERE', (x) => `SHOW TABLES WHERE name = 'events' AND toString(${x}) != ''`],
  ['SHOW TABLES WHERE (a subquery)', (x) => `SHOW TABLES WHERE name IN (SELECT toString(${x}))`],
  ['SHOW TABLES LIMIT', (x) => `SHOW TABLES LIMIT toUInt64(length(toString(${x})))`],
  ['SHOW TABLES FROM … LIKE … LIMIT', (x) => `SHOW TABLES FROM spendscope LIKE 'e%' LIMIT toUInt64(length(toString(${x})))`],
  ['SHOW DATABASES LIMIT', (x) => `SHOW DATABASES LIMIT toUInt64(length(toString(${x})))`],
  ['SHOW DATABASES LIKE … LIMIT', (x) => `SHOW DATABASES NOT LIKE 'x' LIMIT toUInt64(length(toString(${x})))`],
  ['SHOW COLUMNS WHERE', (x) => `SHOW COLUMNS FROM events WHERE toString(${x}) != ''`],
  ['SHOW FULL COLUMNS LIMIT', (x) => `SHOW FULL COLUMNS IN spendscope.events LIMIT toUInt64(length(toString(${x})))`],
  ['DESCRIBE TABLE', (_x, t) => `DESCRIBE TABLE ${t}`],
  ['DESCRIBE TABLE numbers(…)', (x) => `DESCRIBE TABLE numbers(toUInt64(length(toString(${x}))))`],
];

/** Places that name a setting or a format: each with names a client may never choose. */
export const SETTING_AND_FORMAT_CASES: [string, string][] = [
  ["a SETTINGS clause's name", "SELECT count() FROM events SETTINGS additional_table_filters = {'spendscope.events': '1'}"],
  ["a SETTINGS clause's name (in a subquery)", 'SELECT * FROM (SELECT count() FROM events SETTINGS allow_introspection_functions = 1)'],
  ["a SETTINGS clause's name (after a listed one)", "SELECT 1 SETTINGS output_format_json_quote_64bit_integers = 1, format_schema = '/etc'"],
  ["a SETTINGS clause's name (SHOW)", 'SHOW TABLES SETTINGS allow_introspection_functions = 1'],
  ['an EXPLAIN setting', 'EXPLAIN indexes = 1 SELECT count() FROM events'],
  ['an EXPLAIN setting', 'EXPLAIN actions = 1 SELECT count() FROM events'],
  ['an EXPLAIN setting (after a listed one)', 'EXPLAIN header = 1, indexes = 1 SELECT count() FROM events'],
  ['the FORMAT clause', 'SELECT 1 FORMAT Template'],
  ['the FORMAT clause', 'SELECT 1 FORMAT Protobuf'],
  ['the FORMAT clause (SHOW)', 'SHOW TABLES FORMAT Template'],
  ['the FORMAT clause (EXPLAIN)', 'EXPLAIN AST SELECT 1 FORMAT Template'],
];

export interface CorpusCase {
  /** Which kind, place and forbidden thing. */
  what: string;
  sql: string;
  params?: Record<string, string>;
}

/** Every kind × every place × every forbidden thing. */
export function grammarCorpus(forbidden: Forbidden[]): CorpusCase[] {
  const cases: CorpusCase[] = [];
  for (const thing of forbidden) {
    for (const [kind, wrap] of QUERY_KINDS) {
      for (const [place, build] of QUERY_POSITIONS) {
        cases.push({ what: `${kind}, ${place}, ${thing.name}`, sql: wrap(build(thing.expr, thing.table), thing.expr) });
      }
    }
    for (const [form, build] of CATALOG_FORMS) cases.push({ what: `${form}, ${thing.name}`, sql: build(thing.expr, thing.table) });
    for (const [sql, params] of thing.byParameter ?? []) {
      for (const [kind, wrap] of QUERY_KINDS) cases.push({ what: `${kind}, a parameter, ${thing.name}`, sql: wrap(sql, '1'), params });
    }
  }
  // The kinds that name a table and nothing else: EXISTS and SHOW CREATE of a system table.
  cases.push({ what: 'EXISTS, a system table', sql: 'EXISTS TABLE system.processes' });
  cases.push({ what: 'SHOW CREATE, a system table', sql: 'SHOW CREATE TABLE system.processes' });
  cases.push({ what: 'SHOW COLUMNS, a system table', sql: 'SHOW COLUMNS FROM processes FROM system' });
  for (const [place, sql] of SETTING_AND_FORMAT_CASES) cases.push({ what: place, sql });
  return cases;
}
