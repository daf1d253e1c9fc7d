/**
 * One walk for every statement the BI interface takes. Whatever its kind, a statement is checked
 * as the engine reads it, never by its look:
 * 1. the engine formats it (`formatQuery`, pure); that canonical text is what is checked and run;
 * 2. INTO OUTFILE is refused, the FORMAT clause and every SETTINGS clause must name listed ones;
 * 3. `EXPLAIN AST` gives its root: the kind of statement. A kind not listed is refused. A SHOW is
 *    replaced by the SELECT the engine would rewrite it into (show.ts), and that SELECT is what is
 *    checked and run; an EXPLAIN is checked as its kind and settings and its inner query in full;
 * 4. every node of the syntax tree: its kind, every function, table function and table, as
 *    written (every subquery, CTE, window frame, LIMIT, parameter and scalar included);
 * 5. for a query, `EXPLAIN QUERY TREE`: the same as the engine resolved them, and every column
 *    read from a table (declared columns of the database's tables, listed ones of system tables).
 * Step 5 folds constants and runs scalar subqueries, which is safe only because step 4 passed.
 */
import {
  AGGREGATE_BY_NAME,
  AGGREGATE_COMBINATORS,
  AGGREGATE_FUNCTIONS,
  CLIENT_SETTINGS,
  FUNCTIONS,
  LIMIT_SETTINGS,
  OUTPUT_FORMATS,
  SYSTEM_TABLE_COLUMNS,
  TABLE_FUNCTIONS,
} from './allowlist.js';
import type { EngineCatalog } from './catalog.js';
import { accessDenied, ClickHouseException } from './exception.js';
import { sqlString } from './protocol.js';
import { showAsSelect } from './show.js';
import { AST_NODES, EXPLAIN_KINDS, STATEMENT_ROOTS } from './syntax-allowlist.js';
import { hasIntoOutfile, isWord, leadingKeyword, nameOf, splitFormat, tokens, type Token } from './statement.js';

/** Runs a statement on the query's session and answers its result as TabSeparated text. */
export type Run = (sql: string) => Promise<string>;

/** First keywords of the statements the interface takes; any other (a write, DDL, SET) is refused as a readonly user's. */
const READ_KEYWORDS = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN']);

const readonly = (what: string) => new ClickHouseException(164, 'READONLY', `${what}: Cannot execute query in readonly mode`);

interface AstNode {
  depth: number;
  kind: string;
  text: string;
}

/** The nodes of an `EXPLAIN AST` dump (one space of indent a level). */
function astNodes(dump: string): AstNode[] {
  return dump
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const text = line.trim();
      return { depth: line.length - line.trimStart().length, kind: /^\w+/.exec(text)?.[0] ?? '', text };
    });
}

/** Functions whose right side may name a table. */
const IN_FUNCTIONS = new Set(['in', 'notIn', 'globalIn', 'globalNotIn', 'nullIn', 'notNullIn', 'globalNullIn', 'globalNotNullIn']);

export class StatementWalk {
  constructor(
    private readonly catalog: EngineCatalog,
    private readonly database: string,
  ) {}

  /** The statement to run in place of `statement`: checked in full, or refused with the reason. */
  async check(run: Run, statement: string): Promise<string> {
    const canonical = Buffer.from((await run(`SELECT base64Encode(formatQuery(${sqlString(statement)}))`)).trim(), 'base64').toString('utf8');
    return this.checkCanonical(run, canonical);
  }

  /** A format the result may be written in: on the list; an unknown one refused as a server refuses it. */
  async checkFormat(format: string): Promise<void> {
    if (OUTPUT_FORMATS.has(format)) return;
    if (!(await this.catalog.isFormat(format))) throw new ClickHouseException(73, 'UNKNOWN_FORMAT', `Unknown format ${format}`);
    throw accessDenied(`Format ${format} (it may read files or reach the network)`);
  }

  private async checkCanonical(run: Run, canonical: string): Promise<string> {
    const keyword = leadingKeyword(canonical);
    if (!READ_KEYWORDS.has(keyword)) throw readonly(keyword || 'This statement');
    const all = tokens(canonical);
    this.checkNames(all);
    // Before any EXPLAIN, which would write the file itself.
    if (hasIntoOutfile(canonical)) throw accessDenied('INTO OUTFILE');
    await this.checkSettingsClauses(all);
    const { body, format, name } = splitFormat(canonical);
    if (name !== undefined) await this.checkFormat(name);
    const ast = astNodes(await run(`EXPLAIN AST ${body}`));
    const root = ast[0];
    if (!root || !STATEMENT_ROOTS.has(root.kind)) throw accessDenied(`This statement (${root?.kind || keyword})`);
    switch (root.kind) {
      case 'SelectWithUnionQuery':
      case 'SelectIntersectExceptQuery':
        await this.walkSyntax(ast);
        await this.walkResolved(run, body);
        return canonical;
      case 'ShowTables':
      case 'ShowColumns': {
        const select = showAsSelect(body, this.database);
        if (select === undefined) throw accessDenied('This SHOW');
        const checked = await this.checkCanonical(run, select);
        return format ? `${checked}\n${format}` : checked;
      }
      case 'Explain':
        await this.checkExplain(run, root, ast, body);
        return canonical;
      default:
        // DESCRIBE, EXISTS, SHOW CREATE: of one named table (or a listed table function), no query inside.
        if (ast.some((node) => node.kind === 'Subquery')) throw accessDenied(`${keyword} of a query`);
        await this.walkSyntax(ast.slice(1), root.kind === 'DescribeQuery' ? [] : ast.slice(1).filter((n) => n.kind === 'Identifier'));
        return canonical;
    }
  }

  /**
   * Quoted names with control characters are refused: the engine prints names as they are in the
   * trees walked here, one node a line, and such a name could pass for a node of its own. And
   * PREWHERE, which the engine evaluates before the team filter.
   */
  private checkNames(all: Token[]): void {
    for (const token of all) {
      // Raw text and name both: an escape (`\n`) becomes a control character once unquoted.
      // eslint-disable-next-line no-control-regex
      if (token.kind === 'quoted' && /[\x00-\x1f\x7f\\]/.test(token.text + nameOf(token))) throw accessDenied('A quoted name with control characters or escapes');
      // PREWHERE runs before the team filter, on every team's rows of the granules read.
      if (isWord(token, 'PREWHERE')) throw accessDenied('PREWHERE (write the condition in WHERE)');
    }
  }

  /** Every `SETTINGS name = value, …` clause, at any depth: each name one a client may choose or a limit. */
  private async checkSettingsClauses(all: Token[]): Promise<void> {
    for (let i = 0; i < all.length; i++) {
      if (!isWord(all[i], 'SETTINGS')) continue;
      let j = i + 1;
      while (j + 1 < all.length && (all[j]!.kind === 'word' || all[j]!.kind === 'quoted') && all[j + 1]!.text === '=') {
        await this.checkSettingName(nameOf(all[j]!));
        // Past the value: up to a comma at its own depth (the next setting) or whatever ends the clause.
        let depth = 0;
        j += 2;
        while (j < all.length) {
          const text = all[j]!.text;
          if ('([{'.includes(text)) depth++;
          else if (')]}'.includes(text)) {
            if (depth === 0) break;
            depth--;
          } else if (depth === 0 && (text === ',' || isWord(all[j], 'FORMAT'))) break;
          j++;
        }
        if (all[j]?.text !== ',') break;
        j++;
      }
    }
  }

  private async checkSettingName(written: string): Promise<void> {
    const name = (await this.catalog.setting(written))?.name ?? written;
    if (CLIENT_SETTINGS.has(name) || (LIMIT_SETTINGS as readonly string[]).includes(name)) return;
    throw accessDenied(`Setting ${written}`);
  }

  /** EXPLAIN of a listed kind with listed settings, of a query checked in full as itself. */
  private async checkExplain(run: Run, root: AstNode, ast: AstNode[], body: string): Promise<void> {
    const head = root.text.replace(/\s*\(children \d+\)$/, '');
    const kind = head.startsWith('Explain EXPLAIN') ? head.slice('Explain EXPLAIN'.length).trim() : '?';
    const settings = EXPLAIN_KINDS.get(kind);
    if (!settings) throw accessDenied(`EXPLAIN ${kind}`);
    // The inner query's text: past EXPLAIN, its kind's words and its settings (name = value, …).
    const all = tokens(body);
    let i = 1;
    for (const word of kind.split(' ').filter(Boolean)) if (isWord(all[i], word)) i++;
    while (i + 2 < all.length && all[i]!.kind === 'word' && all[i + 1]!.text === '=') {
      if (!settings.has(all[i]!.text)) throw accessDenied(`EXPLAIN ${kind || 'PLAN'} with ${all[i]!.text}`);
      i += all[i + 3]?.text === ',' ? 4 : 3;
    }
    if (i >= all.length) throw accessDenied('This EXPLAIN');
    const inner = body.slice(all[i]!.start);
    if (!['SELECT', 'WITH'].includes(leadingKeyword(inner))) throw accessDenied('EXPLAIN of anything but a query');
    await this.checkCanonical(run, inner);
    // The inner query checked is the one the EXPLAIN holds: the same syntax tree, node for node.
    const held = ast.slice(1).filter((node, index) => !(index === 0 && node.kind === 'Set' && node.depth === 1));
    const own = astNodes(await run(`EXPLAIN AST ${inner}`));
    const same = held.length === own.length && held.every((node, index) => node.text === own[index]!.text && node.depth === own[index]!.depth + 1);
    if (!same) throw accessDenied('This EXPLAIN (its query could not be told apart)');
  }

  /**
   * The nodes of a syntax tree: each kind on the list, each function, table function and table
   * allowed. `tableParts`, for EXISTS and SHOW CREATE: the identifiers that name their table.
   */
  private async walkSyntax(nodes: AstNode[], tableParts: AstNode[] = []): Promise<void> {
    // A parameter may bind `db.table` as one identifier: its parts are what the engine resolves.
    if (tableParts.length > 0) this.checkNamedTable(tableParts.flatMap((node) => splitName(node.text.slice('Identifier '.length))));
    // The nodes above the current one, nearest last.
    const above: AstNode[] = [];
    for (let i = 0; i < nodes.length; i++) {
      const { depth, kind, text } = nodes[i]!;
      while (above.length > 0 && above[above.length - 1]!.depth >= depth) above.pop();
      const parent = above[above.length - 1];
      above.push(nodes[i]!);
      if (!AST_NODES.has(kind)) throw accessDenied(`This statement (${kind || text})`);
      const table = /^TableIdentifier (\S+)/.exec(text);
      if (table) this.checkNamedTable(splitName(table[1]!));
      // A type written as text (CAST, parameters) may name an aggregate: AggregateFunction(groupFormat, …).
      if (kind === 'Literal') for (const named of text.matchAll(/AggregateFunction\(\s*(\w+)/g)) await this.checkFunction(named[1]!);
      const fn = /^Function (\w+)/.exec(text);
      if (!fn) continue;
      const name = fn[1]!;
      if (AGGREGATE_BY_NAME.has(name)) {
        // arrayReduce('sum', …): the aggregate it runs is its first argument, a string.
        const first = nodes[i + 1]?.kind === 'ExpressionList' ? nodes[i + 2] : undefined;
        // The dump comes as TabSeparated, which escapes the quote: Literal \'sum\'.
        const named = first && first.depth === depth + 2 ? /^Literal \\?'\s*(\w+)/.exec(first.text) : null;
        if (!named) throw accessDenied(`${name} of an aggregate not written as a string`);
        await this.checkFunction(named[1]!);
      }
      if (parent?.kind === 'TableExpression') {
        if (!TABLE_FUNCTIONS.has(name)) throw accessDenied(`Table function ${name}`);
        continue;
      }
      await this.checkFunction(name);
      if (IN_FUNCTIONS.has(name)) {
        // `x IN db.table`: the right side (second argument) names a table; the left is a column (`s.status IN (…)`).
        const operands = [];
        for (let j = i + 1; j < nodes.length && nodes[j]!.depth > depth; j++) if (nodes[j]!.depth === depth + 2) operands.push(nodes[j]!);
        const identifier = /^Identifier (\S+\.\S+)/.exec(operands[1]?.text ?? '');
        if (identifier) this.checkNamedTable(splitName(identifier[1]!));
      }
    }
  }

  /**
   * The query as the engine resolved it: tables (reached through IN and views too), table
   * functions, functions by their resolved names, and each column read from a table.
   */
  private async walkResolved(run: Run, query: string): Promise<void> {
    const lines = (await run(`EXPLAIN QUERY TREE ${query}`)).split('\n').map((line) => line.trim());
    const tables = new Map<string, string>();
    for (const line of lines) {
      if (!line.startsWith('TABLE id: ')) continue;
      const id = /^TABLE id: (\d+),/.exec(line)?.[1];
      // The name is the last field but the table's modifiers (FINAL, SAMPLE): an alias comes before it.
      const at = line.lastIndexOf(', table_name: ');
      if (id === undefined || at < 0) throw accessDenied('This query (a table the check could not read)');
      const name = line.slice(at + ', table_name: '.length).split(',')[0]!;
      if (tables.has(id) && tables.get(id) !== name) throw accessDenied('This query (a table the check could not read)');
      tables.set(id, name);
      this.checkNamedTable(splitName(name));
    }
    const own = new Map<string, ReadonlySet<string>>((await this.catalog.tables()).map((table) => [`${this.database}.${table.name}`, table.columns]));
    for (const line of lines) {
      const tableFunction = /^TABLE_FUNCTION id: \d+,.*\btable_function_name: (\w+)/.exec(line);
      if (tableFunction && !TABLE_FUNCTIONS.has(tableFunction[1]!)) throw accessDenied(`Table function ${tableFunction[1]}`);
      const fn = /^FUNCTION id: \d+, (?:alias: .*?, )?function_name: (\w+)/.exec(line);
      if (fn) await this.checkFunction(fn[1]!);
      if (!line.startsWith('COLUMN id: ')) continue;
      const source = / source_id: (\d+)$/.exec(line)?.[1];
      const table = source === undefined ? undefined : tables.get(source);
      if (table === undefined) continue;
      const at = line.lastIndexOf(', column_name: ');
      const column = at < 0 ? '' : line.slice(at + ', column_name: '.length, line.indexOf(', result_type: ', at));
      const [db, name] = splitName(table) as [string, string];
      const allowed = db === 'system' ? SYSTEM_TABLE_COLUMNS.get(name) : own.get(table);
      if (allowed !== '*' && !(allowed && columnOf(allowed, column))) throw accessDenied(`Column ${column} of ${table}`);
    }
  }

  /** A table of the database, or a listed system table (a bare name is the database's: the session uses it). */
  private checkNamedTable(parts: string[]): void {
    if (parts.length === 1) return;
    const [db, table] = parts as [string, string];
    if (parts.length === 2 && (db === this.database || (db === 'system' && SYSTEM_TABLE_COLUMNS.has(table)))) return;
    throw accessDenied(`Table ${parts.join('.')}`);
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
    throw accessDenied(`Function ${written}`);
  }
}

/** A declared column, or a subcolumn of one (`payer.null`, which `payer IS NULL` reads). */
function columnOf(declared: ReadonlySet<string>, column: string): boolean {
  if (declared.has(column)) return true;
  for (let dot = column.indexOf('.'); dot > 0; dot = column.indexOf('.', dot + 1)) if (declared.has(column.slice(0, dot))) return true;
  return false;
}

/** A dotted name as the trees print it, each part unquoted. */
function splitName(name: string): string[] {
  return (name.match(/`[^`]*`|"[^"]*"|[^.]+/g) ?? []).map((part) => part.replace(/^[`"](.*)[`"]$/, '$1'));
}
