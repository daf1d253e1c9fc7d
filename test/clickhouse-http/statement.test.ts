/**
 * Statement text read as ClickHouse's lexer reads it (src/Parsers/Lexer.cpp), no engine needed:
 * what is a string, a comment or a name is never taken for a `;`, a FORMAT clause or INTO OUTFILE.
 * Where a rule is not obvious, the case was checked against the embedded engine (26.7).
 */
import { expect } from 'chai';
import { hasIntoOutfile, leadingKeyword, outputFormat, singleStatement, tokens } from '../../src/clickhouse-http/statement.js';

const kinds = (sql: string) => tokens(sql).map((t) => `${t.kind}:${t.text}`);

describe('ClickHouse statement text, as its lexer reads it', () => {
  it('reads strings with backslash escapes and doubled quotes, names quoted both ways, heredocs and placeholders', () => {
    expect(kinds("SELECT 'it''s', '\\'', \"a\"\"b\", `c``d`")).to.deep.equal(['word:SELECT', "string:'it''s'", 'punct:,', "string:'\\''", 'punct:,', 'quoted:"a""b"', 'punct:,', 'quoted:`c``d`']);
    expect(kinds('SELECT $tag$x; y$tag$, $$z$$, $1$w$1$')).to.deep.equal(['word:SELECT', 'heredoc:$tag$x; y$tag$', 'punct:,', 'heredoc:$$z$$', 'punct:,', 'heredoc:$1$w$1$']);
    // A tag is word characters only: `$a-b$` is no heredoc (the engine reads `$a - b$x$a - b$`).
    expect(kinds('SELECT $a-b$x$a-b$')).to.deep.equal(['word:SELECT', 'word:$a', 'punct:-', 'word:b$x$a', 'punct:-', 'word:b$']);
    expect(kinds("SELECT {s:String}, { n : Nullable(UInt8) }, {e:Enum('a}' = 1)}")).to.deep.equal([
      'word:SELECT',
      'placeholder:{s:String}',
      'punct:,',
      'placeholder:{ n : Nullable(UInt8) }',
      'punct:,',
      "placeholder:{e:Enum('a}' = 1)}",
    ]);
    expect(kinds("SELECT x'41', b'01', 0x1F, 1e-3, 1_000, .5, t.1.1, 1abc")).to.deep.equal([
      'word:SELECT',
      "string:x'41'",
      'punct:,',
      "string:b'01'",
      'punct:,',
      'number:0x1F',
      'punct:,',
      'number:1e-3',
      'punct:,',
      'number:1_000',
      'punct:,',
      'number:.5',
      'punct:,',
      'word:t',
      'punct:.',
      'number:1',
      'punct:.',
      'number:1',
      'punct:,',
      'word:1abc',
    ]);
    expect(kinds('a->b != c <> d == e || f::g')).to.deep.equal(['word:a', 'punct:->', 'word:b', 'punct:!=', 'word:c', 'punct:<>', 'word:d', 'punct:==', 'word:e', 'punct:||', 'word:f', 'punct:::', 'word:g']);
  });

  it('skips --, //, "# " and "#!" comments to the end of the line, and /* */ comments, nested', () => {
    expect(kinds('SELECT 1 -- x ; y\n, 2 // z ;\n, 3 # w ;\n#!/bin/sh ;\n')).to.deep.equal(['word:SELECT', 'number:1', 'punct:,', 'number:2', 'punct:,', 'number:3']);
    expect(kinds('SELECT /* a /* b */ c ; */ 2')).to.deep.equal(['word:SELECT', 'number:2']);
    const at = tokens('SELECT  /**/ x');
    expect(at[1]).to.deep.equal({ kind: 'word', text: 'x', start: 13, end: 14 });
  });

  it('refuses what the lexer refuses, with its SYNTAX_ERROR (62): unclosed strings, names, comments; #x; a lone !', () => {
    for (const [sql, text] of [
      ["SELECT 'x", 'Single quoted string is not closed'],
      ["SELECT 'x\\'", 'Single quoted string is not closed'],
      ['SELECT "x', 'Double quoted string is not closed'],
      ['SELECT `x', 'Back quoted string is not closed'],
      ['SELECT 1 /* x', 'Multiline comment is not closed'],
      ['SELECT 1 /* /* x */', 'Multiline comment is not closed'],
      ['SELECT 1 #x', 'Unrecognized token'],
      ['SELECT !1', 'Exclamation mark'],
    ]) {
      expect(() => tokens(sql!), sql).to.throw(text!).with.property('code', 62);
    }
  });

  it('finds the one statement past strings, names and comments, allows trailing semicolons, refuses a second', () => {
    expect(singleStatement("SELECT ';' AS x; ")).to.equal("SELECT ';' AS x");
    expect(singleStatement('SELECT 1;; -- done\n')).to.equal('SELECT 1');
    expect(singleStatement('SELECT 1 -- ; no\n')).to.equal('SELECT 1 -- ; no\n');
    expect(singleStatement('SELECT `a;b`, "c;d", $$;$$ FROM t /* ; /* ; */ ; */')).to.equal('SELECT `a;b`, "c;d", $$;$$ FROM t /* ; /* ; */ ; */');
    expect(singleStatement("SELECT 'it\\'s;' ;")).to.equal("SELECT 'it\\'s;' ");
    expect(singleStatement("SELECT 'it''s;' ;")).to.equal("SELECT 'it''s;' ");
    for (const two of ['SELECT 1; SELECT 2', "SELECT ';'; DROP TABLE events", 'SELECT 1 /* x */; SELECT 2', "SELECT 'it''s'; SELECT 2", 'SELECT 1 /* /* */ ; */; SELECT 2', 'SELECT 1;;x']) {
      expect(() => singleStatement(two), two).to.throw(/Multi-statements are not allowed/);
    }
    expect(() => singleStatement(' -- nothing\n;')).to.throw('Empty query');
    // An INSERT's inline data is not SQL: the server does not lex it.
    expect(singleStatement('INSERT INTO t FORMAT CSV\n"a;b\n')).to.equal('INSERT INTO t FORMAT CSV\n"a;b\n');
    expect(singleStatement("INSERT INTO t VALUES ('x'); SELECT 1")).to.equal("INSERT INTO t VALUES ('x'); SELECT 1");
  });

  it('finds the leading keyword past comments and parentheses, and never throws', () => {
    expect(leadingKeyword('  /* a */ -- b\n ((select 1))')).to.equal('SELECT');
    expect(leadingKeyword('# c\nwith x as (select 1) select * from x')).to.equal('WITH');
    expect(leadingKeyword("INSERT INTO t FORMAT CSV\n'unclosed")).to.equal('INSERT');
    expect(leadingKeyword('/* unclosed')).to.equal('');
    expect(leadingKeyword("'x'")).to.equal('');
  });

  it("reads the statement's own FORMAT clause at top level, before or after SETTINGS, never one in a string, comment, name or subquery", () => {
    expect(outputFormat('SELECT 42 FORMAT CSV')).to.equal('CSV');
    expect(outputFormat('select 42 format JSONEachRow;')).to.equal('JSONEachRow');
    expect(outputFormat('SELECT 1 FORMAT `CSVWithNames` SETTINGS max_threads = 1')).to.equal('CSVWithNames');
    expect(outputFormat('SELECT 1 SETTINGS max_threads = 1 FORMAT "JSON"')).to.equal('JSON');
    expect(outputFormat('SELECT 1 AS format FORMAT TSV')).to.equal('TSV');
    expect(outputFormat('SELECT format FROM t')).to.equal(undefined);
    expect(outputFormat("SELECT 'FORMAT CSV'")).to.equal(undefined);
    expect(outputFormat('SELECT 1 -- FORMAT CSV\n')).to.equal(undefined);
    expect(outputFormat('SELECT 1 /* FORMAT CSV */')).to.equal(undefined);
    expect(outputFormat('SELECT `FORMAT CSV`')).to.equal(undefined);
    expect(outputFormat('SELECT * FROM (SELECT 1 FORMAT CSV)')).to.equal(undefined);
    expect(outputFormat("SELECT 1 INTO OUTFILE 'f' FORMAT Parquet")).to.equal('Parquet');
  });

  it('finds INTO OUTFILE as two words anywhere, past comments, never inside strings, names or comments', () => {
    for (const yes of ["SELECT 1 INTO OUTFILE 'f'", "select 1 into/**/outfile 'f'", "SELECT 1 INTO -- x\n OUTFILE 'f'", "SELECT 1 Into\n\tOutFile 'f' FORMAT CSV", "SELECT * FROM (SELECT 1 INTO OUTFILE 'f')"]) {
      expect(hasIntoOutfile(yes), yes).to.equal(true);
    }
    for (const no of ["SELECT 'INTO OUTFILE'", 'SELECT 1 -- INTO OUTFILE\n', 'SELECT `INTO OUTFILE`', 'SELECT 1 /* INTO OUTFILE */', 'SELECT 1 AS into, 2 AS outfile', 'SELECT $$ INTO OUTFILE $$', 'SELECT "into" "outfile"']) {
      expect(hasIntoOutfile(no), no).to.equal(false);
    }
  });

  it('reads nested and unclosed placeholders and heredoc tags in time linear in the text', () => {
    // Each `{a:` was read again inside the one before: 23 of them took 20 s, each one more twice that.
    expect(tokens(`SELECT ${'{a:'.repeat(26)}`).length).to.be.greaterThan(26);
    expect(tokens(`SELECT {x:Array(String)} ${'{a:'.repeat(100_000)}`)[1]!.kind).to.equal('placeholder');
    // Each unclosed `$tN$` searched the rest of the text for its close.
    const tags = Array.from({ length: 100_000 }, (_, i) => `$t${i}$`).join(' ');
    expect(tokens(`SELECT ${tags}`).length).to.be.greaterThan(100_000);
    expect(tokens('SELECT $a$x$b$ y $a$, $b$')[1]).to.include({ kind: 'heredoc', text: '$a$x$b$ y $a$' });
  });
});
