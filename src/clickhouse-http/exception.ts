/** An error as ClickHouse reports it: its code, its name and the HTTP status it answers with. */
export class ClickHouseException extends Error {
  constructor(
    readonly code: number,
    readonly codeName: string,
    message: string,
  ) {
    super(message);
  }

  get status(): number {
    return HTTP_STATUS[this.codeName] ?? 500;
  }

  /** The body ClickHouse sends: `Code: N. DB::Exception: <message>. (NAME)`. */
  get text(): string {
    return `Code: ${this.code}. DB::Exception: ${this.message}. (${this.codeName}) (version ${ENGINE_VERSION})\n`;
  }

  /** Reads the code and name out of an engine error (`Code: 60. DB::Exception: ... (UNKNOWN_TABLE)`). */
  static from(err: unknown): ClickHouseException {
    if (err instanceof ClickHouseException) return err;
    const text = err instanceof Error ? err.message : String(err);
    const code = /Code: (\d+)\./.exec(text);
    const name = /\(([A-Z][A-Z0-9_]+)\)(?: \(version [^)]*\))?\.?\s*$/.exec(text);
    // The engine repeats "Code: N. DB::Exception:" when it wraps its own errors: keep the innermost text.
    const message = text
      .replace(/^(?:Code: \d+\. DB::Exception: )+/, '')
      .replace(/\.?\s*\([A-Z][A-Z0-9_]+\)(?: \(version [^)]*\))?\.?\s*$/, '')
      .trim();
    return new ClickHouseException(code ? Number(code[1]) : 1001, name ? name[1]! : 'STD_EXCEPTION', message);
  }
}

export const ENGINE_VERSION = '26.7.2.1';

/** The HTTP status ClickHouse answers an error with (its HTTPHandler), by error name; 500 otherwise. */
const HTTP_STATUS: Record<string, number> = {
  REQUIRED_PASSWORD: 401,
  AUTHENTICATION_FAILED: 401,
  WRONG_PASSWORD: 401,
  UNKNOWN_USER: 401,
  ACCESS_DENIED: 403,
  READONLY: 403,
  CANNOT_PARSE_TEXT: 400,
  CANNOT_PARSE_ESCAPE_SEQUENCE: 400,
  CANNOT_PARSE_QUOTED_STRING: 400,
  CANNOT_PARSE_DATE: 400,
  CANNOT_PARSE_DATETIME: 400,
  CANNOT_PARSE_NUMBER: 400,
  CANNOT_PARSE_INPUT_ASSERTION_FAILED: 400,
  SYNTAX_ERROR: 400,
  BAD_ARGUMENTS: 400,
  UNKNOWN_SETTING: 400,
  UNKNOWN_FORMAT: 400,
  UNKNOWN_FUNCTION: 400,
  UNKNOWN_IDENTIFIER: 400,
  UNKNOWN_TYPE: 400,
  TYPE_MISMATCH: 400,
  ILLEGAL_TYPE_OF_ARGUMENT: 400,
  NUMBER_OF_ARGUMENTS_DOESNT_MATCH: 400,
  UNKNOWN_QUERY_PARAMETER: 400,
  QUERY_IS_TOO_LARGE: 400,
  UNKNOWN_TABLE: 404,
  UNKNOWN_DATABASE: 404,
  UNKNOWN_VIEW: 404,
  UNKNOWN_DICTIONARY: 404,
  TIMEOUT_EXCEEDED: 500,
  QUOTA_EXCEEDED: 429,
  HTTP_LENGTH_REQUIRED: 411,
  UNSUPPORTED_METHOD: 501,
  NOT_IMPLEMENTED: 501,
};

/** A statement that reaches what a team's read key may not (497, as a server refuses a grant it lacks). */
export const accessDenied = (what: string) => new ClickHouseException(497, 'ACCESS_DENIED', `${what}: a spendscope key reads its team's rows of the spendscope database only`);
