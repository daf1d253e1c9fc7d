/**
 * SHOW TABLES, SHOW DATABASES and SHOW COLUMNS as the SELECT the engine rewrites each into
 * (InterpreterShowTablesQuery, InterpreterShowColumnsQuery of ClickHouse 26.7, text for text), so
 * that the BI interface checks and runs that SELECT: the engine would otherwise run the statement's
 * WHERE and LIMIT expressions inside a SELECT no check ever saw. Read from the statement as the
 * engine formats it (formatQuery), so each clause stands where the grammar puts it; whatever is
 * built here is checked in full before it runs, so a clause read wrongly can only be refused.
 */
import { accessDenied, ClickHouseException } from './exception.js';
import { sqlString } from './protocol.js';
import { isWord, nameOf, tokens, type Token } from './statement.js';

class Cursor {
  private i = 0;
  constructor(
    private readonly sql: string,
    private readonly all: Token[],
  ) {}
  /** Takes the next token when it is one of these words. */
  word(...words: string[]): string | undefined {
    const token = this.all[this.i];
    const found = words.find((w) => isWord(token, w));
    if (found) this.i++;
    return found;
  }
  name(): string | undefined {
    const token = this.all[this.i];
    if (!token || (token.kind !== 'word' && token.kind !== 'quoted')) return undefined;
    this.i++;
    return nameOf(token);
  }
  string(): string | undefined {
    const token = this.all[this.i];
    if (token?.kind !== 'string') return undefined;
    this.i++;
    return token.text;
  }
  /** The text up to the first of these words at the top level (or the end). */
  expressionUntil(...words: string[]): string {
    const from = this.i;
    let depth = 0;
    while (this.i < this.all.length) {
      const token = this.all[this.i]!;
      if (depth === 0 && words.some((w) => isWord(token, w))) break;
      if ('([{'.includes(token.text)) depth++;
      else if (')]}'.includes(token.text)) depth--;
      this.i++;
    }
    if (this.i === from) throw unreadable();
    return this.sql.slice(this.all[from]!.start, this.all[this.i - 1]!.end);
  }
  done(): boolean {
    return this.i >= this.all.length;
  }
  /** Takes the next token when it is this punctuation. */
  punct(text: string): boolean {
    if (this.all[this.i]?.text !== text || this.all[this.i]!.kind !== 'punct') return false;
    this.i++;
    return true;
  }
}

const unreadable = () => new ClickHouseException(62, 'SYNTAX_ERROR', 'This SHOW statement could not be read');

/** `[NOT] [I]LIKE '<pattern>'` or `WHERE <expression>`, then `LIMIT <expression>`, as the SHOW grammar orders them. */
function filters(cursor: Cursor, allowWhere: boolean): { like?: string; where?: string; limit?: string; settings?: string } {
  const out: { like?: string; where?: string; limit?: string; settings?: string } = {};
  const not = cursor.word('NOT');
  const like = cursor.word('LIKE', 'ILIKE');
  if (like) {
    const pattern = cursor.string();
    if (pattern === undefined) throw unreadable();
    out.like = `${not ? 'NOT ' : ''}${like} ${pattern}`;
  } else if (not) throw unreadable();
  else if (allowWhere && cursor.word('WHERE')) out.where = cursor.expressionUntil('LIMIT', 'SETTINGS');
  if (cursor.word('LIMIT')) out.limit = cursor.expressionUntil('SETTINGS');
  if (cursor.word('SETTINGS')) out.settings = cursor.expressionUntil();
  if (!cursor.done()) throw unreadable();
  return out;
}

/**
 * The SELECT a SHOW statement of these kinds is (without its FORMAT clause), or undefined for any
 * other SHOW. The database must be the interface's own.
 */
export function showAsSelect(statement: string, database: string): string | undefined {
  const all = tokens(statement);
  while (all.length > 0 && all[all.length - 1]!.text === ';') all.pop();
  const cursor = new Cursor(statement, all);
  if (!cursor.word('SHOW')) return undefined;
  // FULL and EXTENDED, in either order (EXTENDED only shows virtual columns, which a key does not read).
  let full = false;
  for (let modifier = cursor.word('FULL', 'EXTENDED'); modifier; modifier = cursor.word('FULL', 'EXTENDED')) full ||= modifier === 'FULL';
  const tail = (limit: string | undefined, settings: string | undefined) => `${limit ? ` LIMIT ${limit}` : ''}${settings ? ` SETTINGS ${settings}` : ''}`;
  if (cursor.word('DATABASES')) {
    const { like, limit, settings } = filters(cursor, false);
    return `SELECT name FROM system.databases${like ? ` WHERE name ${like}` : ''} ORDER BY name ASC${tail(limit, settings)}`;
  }
  if (cursor.word('TABLES')) {
    let from = database;
    if (cursor.word('FROM', 'IN')) from = cursor.name() ?? '';
    if (from !== database) throw accessDenied(`Database ${from}`);
    const { like, where, limit, settings } = filters(cursor, true);
    const conditions = [`database = ${sqlString(from)}`, ...(like ? [`name ${like}`] : []), ...(where ? [`(${where})`] : [])];
    return `SELECT name FROM system.tables WHERE ${conditions.join(' AND ')} ORDER BY name ASC${tail(limit, settings)}`;
  }
  if (cursor.word('COLUMNS', 'FIELDS')) {
    if (!cursor.word('FROM', 'IN')) throw unreadable();
    let table = cursor.name();
    let from = database;
    if (cursor.punct('.')) {
      from = table ?? '';
      table = cursor.name();
    }
    if (cursor.word('FROM', 'IN')) from = cursor.name() ?? '';
    if (table === undefined) throw unreadable();
    if (from !== database) throw accessDenied(`Database ${from}`);
    const { like, where, limit, settings } = filters(cursor, true);
    const conditions = [`(database_ = ${sqlString(from)})`, `(table_ = ${sqlString(table)})`, ...(like ? [`(field ${like})`] : []), ...(where ? [`(${where})`] : [])];
    return (
      "SELECT name_ AS field, type_ AS type, multiIf(startsWith(type_, 'Nullable('), 'YES', startsWith(type_, 'LowCardinality(Nullable('), 'YES', 'NO') AS `null`, " +
      "trimBoth(concatWithSeparator(' ', if(is_in_primary_key_, 'PRI', ''), if(is_in_sorting_key_, 'SOR', ''))) AS key, " +
      "if((default_kind_ IN ('ALIAS', 'DEFAULT', 'MATERIALIZED')), default_expression_, NULL) AS default, '' AS extra" +
      (full ? ", NULL AS collation, comment_ AS comment, '' AS privileges" : '') +
      ' FROM (SELECT name AS name_, database AS database_, `table` AS table_, type AS type_, is_in_primary_key AS is_in_primary_key_, ' +
      'is_in_sorting_key AS is_in_sorting_key_, default_kind AS default_kind_, default_expression AS default_expression_, comment AS comment_ FROM system.columns)' +
      ` WHERE ${conditions.join(' AND ')} ORDER BY field ASC, type ASC, NULL ASC, key ASC, default ASC, extra ASC${tail(limit, settings)}`
    );
  }
  return undefined;
}
