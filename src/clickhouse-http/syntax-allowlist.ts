/**
 * What a statement's syntax may hold, by the engine's own names for it: the kinds of statement
 * (the root of `EXPLAIN AST`), the kinds of node below it, and the EXPLAIN kinds with their
 * settings. What the nodes name (functions, tables, formats, settings) is in allowlist.ts.
 */
import { names } from './allowlist.js';

/**
 * Kinds of node of `EXPLAIN AST` that a statement may contain. Each shows every function and
 * table inside it as nodes of its own, so the walk sees them; a kind not listed (APPLY, for
 * one, whose function the dump does not show) is refused.
 */
export const AST_NODES: ReadonlySet<string> = new Set(
  names(
    `SelectWithUnionQuery SelectIntersectExceptQuery SelectQuery ExpressionList Identifier Literal Function Subquery
     WithElement TablesInSelectQuery TablesInSelectQueryElement TableExpression TableIdentifier TableJoin ArrayJoin
     Asterisk QualifiedAsterisk ColumnsRegexpMatcher ColumnsListMatcher QualifiedColumnsRegexpMatcher
     QualifiedColumnsListMatcher ColumnsTransformerList ColumnsExceptTransformer ColumnsReplaceTransformer
     ColumnsReplaceTransformerReplacement OrderByElement InterpolateElement WindowDefinition WindowListElement Set
     QueryParameter SampleRatio Alias`,
  ),
);

/**
 * Kinds of statement, by the root node of their `EXPLAIN AST`: a query, EXPLAIN of one, the SHOW
 * forms the interface rewrites into queries, and the catalog statements of one named table.
 */
export const STATEMENT_ROOTS: ReadonlySet<string> = new Set(
  names('SelectWithUnionQuery SelectIntersectExceptQuery Explain ShowTables ShowColumns DescribeQuery ExistsTableQuery ShowCreateTableQuery ShowCreateViewQuery'),
);

/**
 * EXPLAIN kinds (the root's text after `Explain EXPLAIN`), and the settings each may take: the
 * query as parsed and analysed. Left out: PLAN (plain EXPLAIN), ESTIMATE and PIPELINE, which show
 * counts of rows, marks, parts, granules or streams of every team's data together.
 */
export const EXPLAIN_KINDS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['AST', new Set(names('graph optimize'))],
  ['SYNTAX', new Set(names('oneline run_query_tree_passes query_tree_passes'))],
  ['QUERY TREE', new Set(names('run_passes dump_passes passes dump_tree dump_ast'))],
]);
