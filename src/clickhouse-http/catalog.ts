/**
 * What the engine says of its functions, settings and formats (fixed for a process) and of the
 * database's tables and their columns (changed by migrations), as the BI checks ask it.
 */

export interface CatalogTable {
  name: string;
  /** Whether its rows carry team_id (the team filter narrows them); a table without is read as empty. */
  hasTeam: boolean;
  /** Its declared columns: a virtual one (_part, _part_offset, …) is not among them. */
  columns: ReadonlySet<string>;
}

export interface EngineCatalog {
  tables(): Promise<CatalogTable[]>;
  /** A function's canonical name as the engine resolves what was written (an alias, another case), or the name as written. */
  functionName(written: string): Promise<string>;
  /** A setting's canonical name and default value, or undefined for a setting the engine does not know. */
  setting(name: string): Promise<{ name: string; default: string } | undefined>;
  /** Whether the engine knows a format by this name. */
  isFormat(name: string): Promise<boolean>;
}

type Query = <Row>(sql: string, params?: Record<string, unknown>) => Promise<Row[]>;

/**
 * The engine's catalog, read through `query`: the database's tables and views and whether each
 * has team_id (kept a minute: only migrations change them), and the engine's functions and
 * settings (read once: they are the engine's, fixed for the process).
 */
export function engineCatalog(query: Query, database: string): EngineCatalog {
  let cached: { at: number; tables: CatalogTable[] } | undefined;
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
      const columns = new Map<string, Set<string>>(tables.map((t) => [t.name, new Set<string>()]));
      for (const { table, name } of await query<{ table: string; name: string }>('SELECT table, name FROM system.columns WHERE database = {db:String}', { db: database })) {
        columns.get(table)?.add(name);
      }
      cached = { at: Date.now(), tables: tables.map((t) => ({ name: t.name, hasTeam: columns.get(t.name)!.has('team_id'), columns: columns.get(t.name)! })) };
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
