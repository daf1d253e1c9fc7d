/**
 * Statement text read the way ClickHouse's lexer reads it (src/Parsers/Lexer.cpp), so that what
 * the protocol and the policy find in a query (its one statement, its FORMAT clause, an INTO
 * OUTFILE) is what the engine will find: `--`, `//`, `# ` and `#!` comments to the end of the
 * line; `/* *\/` comments, nested; '' strings, "" and `` identifiers with backslash escapes and
 * doubled quotes; x'..' and b'..' strings; `$tag$…$tag$` heredocs (tag of word characters);
 * `{name:Type}` placeholders; numbers (0x, 0b, exponents, `_` separators, `1abc` is a word).
 */
import { ClickHouseException } from './exception.js';

export interface Token {
  kind: 'word' | 'quoted' | 'string' | 'number' | 'placeholder' | 'heredoc' | 'punct';
  text: string;
  start: number;
  end: number;
}

type Scanned = { kind: Token['kind'] | 'skip'; end: number } | { error: string; end: number };

const isWordChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isHex = (c: string | undefined) => c !== undefined && /[0-9A-Fa-f]/.test(c);
const ASCII_SPACE = /[ \t\n\r\f\v]/;

/** `_` between digits of a number (isNumberSeparator): never first in a block, never last, never doubled. */
function separatorAt(sql: string, i: number, startOfBlock: boolean, hex: boolean): boolean {
  if (startOfBlock || sql[i] !== '_') return false;
  const next = sql[i + 1];
  return hex ? isHex(next) : isDigit(next);
}

/** Past the digits of one block (integer part, fraction or exponent). */
function digits(sql: string, i: number, hex: boolean, startOfBlock: boolean): number {
  let block = startOfBlock;
  while (i < sql.length && ((hex ? isHex(sql[i]) : isDigit(sql[i])) || separatorAt(sql, i, block, hex))) {
    i++;
    block = false;
  }
  return i;
}

function quoted(sql: string, i: number, quote: string): number | undefined {
  i++;
  while (i < sql.length) {
    const c = sql[i];
    if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else if (c === '\\') {
      if (i + 1 >= sql.length) return undefined;
      i += 2;
    } else i++;
  }
  return undefined;
}

/** One token of ClickHouse's lexer starting at `i` (`skip` for whitespace and comments). */
/**
 * Where each `$tag$` of a statement stands, found in one pass on first use: the close of a heredoc
 * is then a look-up, not a search of the rest of the text (many unclosed tags made that quadratic).
 */
class Heredocs {
  private byTag: Map<string, number[]> | undefined;
  constructor(private readonly sql: string) {}

  /** The start of the first `tag` at or after `from`, or -1. */
  next(tag: string, from: number): number {
    this.byTag ??= this.index();
    const at = this.byTag.get(tag) ?? [];
    let lo = 0;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid]! < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < at.length ? at[lo]! : -1;
  }

  private index(): Map<string, number[]> {
    const byTag = new Map<string, number[]>();
    const sql = this.sql;
    for (let p = sql.indexOf('$'); p >= 0; ) {
      const q = sql.indexOf('$', p + 1);
      if (q < 0) break;
      if (/^\w*$/.test(sql.slice(p + 1, q))) {
        const tag = sql.slice(p, q + 1);
        const list = byTag.get(tag);
        if (list) list.push(p);
        else byTag.set(tag, [p]);
      }
      p = q;
    }
    return byTag;
  }
}


function scan(sql: string, i: number, prev: Token | undefined, heredocs: Heredocs): Scanned {
  const n = sql.length;
  const c = sql[i]!;
  const lineEnd = (from: number) => {
    const nl = sql.indexOf('\n', from);
    return nl < 0 ? n : nl;
  };
  if (ASCII_SPACE.test(c)) {
    let j = i + 1;
    while (j < n && ASCII_SPACE.test(sql[j]!)) j++;
    return { kind: 'skip', end: j };
  }
  if (isDigit(c)) {
    let j: number;
    if (prev?.kind === 'punct' && prev.text === '.') {
      // `x.1.1`: after a dot only a plain integer, for chained tuple access.
      j = digits(sql, i + 1, false, false);
    } else {
      let hex = false;
      j = i;
      let block = false;
      if (i + 2 < n && c === '0' && /[xXbB]/.test(sql[i + 1]!)) {
        const valid = /[xX]/.test(sql[i + 1]!) ? isHex(sql[i + 2]) : sql[i + 2] === '0' || sql[i + 2] === '1';
        hex = valid && /[xX]/.test(sql[i + 1]!);
        j = valid ? i + 2 : i + 1;
        block = valid;
      } else j = i + 1;
      j = digits(sql, j, hex, block);
      if (sql[j] === '.') j = digits(sql, j + 1, hex, true);
      if (j + 1 < n && (hex ? /[pP]/ : /[eE]/).test(sql[j]!)) {
        j++;
        if (j + 1 < n && (sql[j] === '-' || sql[j] === '+')) j++;
        j = digits(sql, j, false, true);
      }
    }
    if (isWordChar(sql[j])) {
      // `1abc` is a name; `1.5abc` is an error.
      let k = j + 1;
      while (k < n && isWordChar(sql[k])) k++;
      return /^[\w$]*$/.test(sql.slice(i, k)) ? { kind: 'word', end: k } : { error: 'Wrong number', end: k };
    }
    return { kind: 'number', end: j };
  }
  if (c === "'" || c === '"' || c === '`') {
    const end = quoted(sql, i, c);
    if (end === undefined) return { error: `${c === "'" ? 'Single' : c === '"' ? 'Double' : 'Back'} quoted string is not closed`, end: n };
    return { kind: c === "'" ? 'string' : 'quoted', end };
  }
  if (c === '.') {
    const afterValue = prev && (prev.kind === 'word' || prev.kind === 'quoted' || prev.kind === 'number' || (prev.kind === 'punct' && (prev.text === ')' || prev.text === ']')));
    if (i > 0 && (!isDigit(sql[i + 1]) || afterValue)) return { kind: 'punct', end: i + 1 };
    let j = digits(sql, i + 1, false, true);
    if (j + 1 < n && /[eE]/.test(sql[j]!)) {
      j++;
      if (j + 1 < n && (sql[j] === '-' || sql[j] === '+')) j++;
      j = digits(sql, j, false, true);
    }
    return { kind: 'number', end: j };
  }
  const two = sql.slice(i, i + 2);
  if (two === '--' || two === '//') return { kind: 'skip', end: lineEnd(i) };
  if (c === '#') return sql[i + 1] === ' ' || sql[i + 1] === '!' ? { kind: 'skip', end: lineEnd(i) } : { error: 'Unrecognized token', end: i + 1 };
  if (two === '/*') {
    // Nested, as the SQL standard has them.
    let depth = 1;
    let j = i + 2;
    while (j + 2 <= n) {
      if (sql[j] === '/' && sql[j + 1] === '*') {
        depth++;
        j += 2;
      } else if (sql[j] === '*' && sql[j + 1] === '/') {
        j += 2;
        if (--depth === 0) return { kind: 'skip', end: j };
      } else j++;
    }
    return { error: 'Multiline comment is not closed', end: n };
  }
  if (['->', '==', '!=', '<>', '<=', '>=', '::', '||', '@@', '\\G'].includes(two)) return { kind: 'punct', end: i + 2 };
  if (c === '!') return { error: 'Exclamation mark can only occur in != operator', end: i + 1 };
  if (c === '\\') return { error: 'Unrecognized token', end: i + 1 };
  if ('()[]{},;+-*/%=<>?:|@'.includes(c)) return { kind: 'punct', end: i + 1 };
  if (c === '$') {
    const tag = /^\$\w*\$/.exec(sql.slice(i, i + 256))?.[0];
    if (tag) {
      const close = heredocs.next(tag, i + tag.length);
      if (close >= 0) return { kind: 'heredoc', end: close + tag.length };
    }
    if (!isWordChar(sql[i + 1]) && sql[i + 1] !== '$') return { kind: 'punct', end: i + 1 };
  }
  if ((c === 'x' || c === 'X' || c === 'b' || c === 'B') && sql[i + 1] === "'" && i + 2 < n) {
    const re = /[xX]/.test(c) ? /^[0-9A-Fa-f]*/ : /^[01]*/;
    const j = i + 2 + re.exec(sql.slice(i + 2))![0].length;
    return sql[j] === "'" ? { kind: 'string', end: j + 1 } : { error: 'Single quoted string is not closed', end: n };
  }
  if (isWordChar(c) || c === '$') {
    let j = i + 1;
    while (j < n && (isWordChar(sql[j]) || sql[j] === '$')) j++;
    return { kind: 'word', end: j };
  }
  // Unicode whitespace (text pasted from a word processor) is whitespace; anything else an error.
  const space = /^\s+/u.exec(sql.slice(i, i + 64));
  if (space) return { kind: 'skip', end: i + space[0].length };
  return { error: 'Unrecognized token', end: i + 1 };
}

function syntaxError(sql: string, start: number, description: string): ClickHouseException {
  const excerpt = sql.slice(start, start + 40);
  return new ClickHouseException(62, 'SYNTAX_ERROR', `${description}: Syntax error: failed at position ${start + 1} (${excerpt}): ${excerpt}. `.trimEnd());
}

/** The significant tokens of `sql` from `from`, lazily (so a caller that stops early never reads further). */
function* lex(sql: string, from = 0, placeholders = true, heredocs = new Heredocs(sql)): Generator<Token> {
  let i = from;
  let prev: Token | undefined;
  while (i < sql.length) {
    const scanned = scan(sql, i, prev, heredocs);
    if ('error' in scanned) throw syntaxError(sql, i, scanned.error);
    if (scanned.kind === 'skip') {
      i = scanned.end;
      continue;
    }
    let token: Token = { kind: scanned.kind, text: sql.slice(i, scanned.end), start: i, end: scanned.end };
    if (placeholders && token.text === '{') token = placeholderAt(sql, token, heredocs) ?? token;
    prev = token;
    i = token.end;
    yield token;
  }
}

/** `{name:Type}` from its opening brace, as ParserSubstitution reads it (the type may hold parentheses and strings). */
function placeholderAt(sql: string, open: Token, heredocs: Heredocs): Token | undefined {
  // A type holds no placeholder: read without looking for one, or `{a:{a:{a:…` would take exponential time.
  const inner = lex(sql, open.end, false, heredocs);
  const name = inner.next().value as Token | undefined;
  const colon = inner.next().value as Token | undefined;
  if (!name || (name.kind !== 'word' && name.kind !== 'quoted') || colon?.text !== ':') return undefined;
  let depth = 0;
  // No type holds a brace: the scan stops at the next one, so every brace of a statement is read past once or twice.
  for (const token of inner) {
    if (token.text === '(') depth++;
    else if (token.text === ')') depth--;
    else if (token.text === '{') return undefined;
    else if (token.text === '}') return depth <= 0 ? { kind: 'placeholder', text: sql.slice(open.start, token.end), start: open.start, end: token.end } : undefined;
  }
  return undefined;
}

/** The significant tokens of a statement: comments and whitespace skipped; a lexical error is ClickHouse's syntax error. */
export function tokens(sql: string): Token[] {
  return [...lex(sql)];
}

export const isWord = (token: Token | undefined, word: string) => token?.kind === 'word' && token.text.toUpperCase() === word;

/**
 * The one statement of a query, a trailing semicolon (or several) allowed; anything after it is
 * refused, as a ClickHouse server refuses it over HTTP (parseQuery with allow_multi_statements
 * off). An INSERT's inline data (after `FORMAT <name>` or `VALUES`) is not SQL and is not read.
 */
export function singleStatement(sql: string): string {
  const rest = lex(sql);
  const first = rest.next().value as Token | undefined;
  if (!first || first.text === ';') throw new ClickHouseException(62, 'SYNTAX_ERROR', 'Empty query');
  const insert = isWord(first, 'INSERT');
  let depth = first.text === '(' ? 1 : 0;
  let previous: Token = first;
  for (let next = rest.next(); !next.done; next = rest.next()) {
    const token = next.value;
    if (token.text === '(' || token.text === '[') depth++;
    else if (token.text === ')' || token.text === ']') depth--;
    else if (insert && depth === 0 && (isWord(token, 'VALUES') || isWord(previous, 'FORMAT'))) return sql;
    else if (token.text === ';') {
      for (let after = rest.next(); !after.done; after = rest.next()) {
        if (after.value.text !== ';') throw new ClickHouseException(62, 'SYNTAX_ERROR', 'Multi-statements are not allowed');
      }
      return sql.slice(0, token.start);
    }
    previous = token;
  }
  return sql;
}

/** The first keyword of a statement, past comments and opening parentheses ('' when there is none, or the text cannot be read). */
export function leadingKeyword(sql: string): string {
  try {
    for (const token of lex(sql)) {
      if (token.text === '(') continue;
      return token.kind === 'word' ? token.text.toUpperCase() : '';
    }
  } catch {
    // An unclosed comment or string before any keyword: the engine reports it.
  }
  return '';
}

/** A name as written: bare, or a quoted identifier unquoted. */
export function nameOf(token: Token): string {
  if (token.kind !== 'quoted') return token.text;
  const quote = token.text[0]!;
  return token.text.slice(1, -1).replace(new RegExp(`\\\\(.)|${quote === '`' ? '``' : '""'}`, 'g'), (_match, escaped: string | undefined) => escaped ?? quote);
}

/**
 * The statement's own `FORMAT <name>` clause (ParserQueryWithOutput): at top level, followed only
 * by the end of the statement or a trailing `SETTINGS …` clause. Its name, and where it stands.
 */
export function formatClause(sql: string): { name: string; start: number; end: number } | undefined {
  const all = tokens(sql);
  let end = all.length;
  while (end > 0 && all[end - 1]!.text === ';') end--;
  let depth = 0;
  for (let i = 0; i < end; i++) {
    const token = all[i]!;
    if (token.text === '(' || token.text === '[' || token.text === '{') depth++;
    else if (token.text === ')' || token.text === ']' || token.text === '}') depth--;
    else if (depth === 0 && isWord(token, 'FORMAT')) {
      const name = all[i + 1];
      if (!name || (name.kind !== 'word' && name.kind !== 'quoted')) continue;
      if (i + 2 === end || isWord(all[i + 2], 'SETTINGS')) return { name: nameOf(name), start: token.start, end: name.end };
    }
  }
  return undefined;
}

/** The format named by the statement's own `FORMAT <name>` clause, if it has one. */
export function outputFormat(sql: string): string | undefined {
  return formatClause(sql)?.name;
}

/** The statement without its own FORMAT clause (what EXPLAIN takes), that clause's text ('' without one) and the format it names. */
export function splitFormat(sql: string): { body: string; format: string; name?: string } {
  const clause = formatClause(sql);
  if (!clause) return { body: sql, format: '' };
  return { body: `${sql.slice(0, clause.start)}${sql.slice(clause.end)}`.trim(), format: sql.slice(clause.start, clause.end), name: clause.name };
}

/** Whether the words INTO OUTFILE appear as two consecutive words anywhere (a result written to the server's disk). */
export function hasIntoOutfile(sql: string): boolean {
  const all = tokens(sql);
  return all.some((token, i) => isWord(token, 'INTO') && isWord(all[i + 1], 'OUTFILE'));
}
