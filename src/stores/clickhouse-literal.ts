/** A ClickHouse string literal: backslashes and quotes escaped, for values the engine must see inline. */
export const sqlString = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
