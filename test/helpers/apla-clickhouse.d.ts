/** @apla/clickhouse ships no types: the part the tests use. */
declare module '@apla/clickhouse' {
  import type { Duplex } from 'node:stream';
  interface Options {
    host: string;
    port?: number;
    user?: string;
    password?: string;
    path?: string;
    format?: string;
    dataObjects?: boolean;
    readonly?: boolean;
    queryOptions?: Record<string, unknown>;
  }
  class ClickHouse {
    constructor(options: Options);
    query(sql: string, options?: Partial<Options>, callback?: (err: Error | null, result: unknown) => void): Duplex;
    querying(sql: string, options?: Partial<Options>): Promise<{ data: unknown[]; meta: { name: string; type: string }[]; rows: number }>;
  }
  export = ClickHouse;
}
