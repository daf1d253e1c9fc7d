import fs from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { ApiError, type FieldError } from './errors.js';

type JsonSchema = Record<string, unknown>;

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module.
const formatsModule = addFormatsPlugin as unknown as { default?: (ajv: Ajv2020) => Ajv2020 };
const addFormats = formatsModule.default ?? (addFormatsPlugin as unknown as (ajv: Ajv2020) => Ajv2020);

/**
 * The JSON Schemas of `schema/api/`. The same files feed validation and the OpenAPI document, so
 * the two cannot drift. A file's `$id` is its file name. Each is compiled the first time a request
 * uses it (a few ms once), not at start: compiling all 91 both ways took 1.3 s of every start.
 */
export class SchemaRegistry {
  readonly schemas = new Map<string, JsonSchema>();
  // Bodies are checked as sent; query strings arrive as text, so that instance coerces types.
  private readonly strict = newAjv({ coerceTypes: false, validateSchema: true });
  // The same files: checked against the meta-schema once, by the strict instance.
  private readonly coercing = newAjv({ coerceTypes: true, validateSchema: false });
  private readonly strictValidators = new Map<string, ValidateFunction>();
  private readonly queryValidators = new Map<string, ValidateFunction>();

  constructor(dir: string) {
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
      const schema = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as JsonSchema;
      if (schema.$id !== file) throw new Error(`schema/api/${file}: $id must be "${file}"`);
      this.schemas.set(file, schema);
      // Checked against the meta-schema here; compiled (strict mode's checks) on first use.
      this.strict.addSchema(schema);
      this.coercing.addSchema(schema);
    }
  }

  /** Compiles every schema both ways now: the test that each one compiles under strict mode. */
  compileAll(): void {
    for (const id of this.schemas.keys()) {
      this.validator(this.strictValidators, this.strict, id);
      this.validator(this.queryValidators, this.coercing, id);
    }
  }

  /** Validates a request body; throws a 400 naming every bad field. */
  body<T>(id: string, data: unknown): T {
    return this.check(this.strictValidators, this.strict, id, data, 'body') as T;
  }

  /** Validates (and coerces) a query string object; throws a 400 naming every bad parameter. */
  query<T>(id: string, data: Record<string, unknown>): T {
    const copy = { ...data };
    const numbers = numericText(this.schemas.get(id), copy);
    if (numbers.length > 0) {
      throw new ApiError('validation_failed', `Query string is invalid: ${numbers[0]!.field} ${numbers[0]!.message}`, numbers);
    }
    return this.check(this.queryValidators, this.coercing, id, copy, 'query') as T;
  }

  /** Field errors of a value against a schema, without throwing (responses, per-record checks). */
  problems(id: string, data: unknown): FieldError[] {
    const validate = this.validator(this.strictValidators, this.strict, id);
    return validate(data) ? [] : toFieldErrors(validate.errors ?? []);
  }

  private check(validators: Map<string, ValidateFunction>, ajv: Ajv2020, id: string, data: unknown, where: string): unknown {
    const validate = this.validator(validators, ajv, id);
    if (validate(data)) return data;
    // A problem with the whole value (an array where an object belongs) is named after where it is.
    const details = toFieldErrors(validate.errors ?? []).map((d) => (d.field ? d : { ...d, field: where }));
    const first = details[0];
    const what = where === 'body' ? 'Request body' : 'Query string';
    const message = first ? `${what} is invalid: ${first.field ? `${first.field} ` : ''}${first.message}` : `${what} is invalid`;
    throw new ApiError('validation_failed', message, details);
  }

  private validator(validators: Map<string, ValidateFunction>, ajv: Ajv2020, id: string): ValidateFunction {
    let validate = validators.get(id);
    if (!validate) {
      if (!this.schemas.has(id)) throw new Error(`No schema ${id} in schema/api`);
      validate = ajv.getSchema(id)!;
      validators.set(id, validate);
    }
    return validate;
  }
}

function newAjv(options: { coerceTypes: boolean; validateSchema: boolean }): Ajv2020 {
  // verbose: errors carry their schema, so an `x-message` next to a pattern can replace ajv's text.
  const ajv = new Ajv2020({ allErrors: true, strict: true, useDefaults: true, coerceTypes: options.coerceTypes, validateSchema: options.validateSchema, verbose: true });
  addFormats(ajv);
  // OpenAPI annotations that ajv does not know but must accept in shared files.
  ajv.addKeyword('example');
  // A message for people, used instead of ajv's when a field fails its own constraints.
  ajv.addKeyword('x-message');
  return ajv;
}

/** A time query parameter: Unix ms or ISO 8601; anything else is a 400 naming the parameter. */
export function parseQueryTime(value: string, field: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new ApiError('validation_failed', `Query string is invalid: ${field} is not a valid time`, [{ field, message: 'is not a valid time' }]);
  }
  // The event store's times (DateTime64(3)) end with 2299; a bound past it could not be compared.
  if (ms > LATEST_QUERY_TIME) {
    throw new ApiError('validation_failed', `Query string is invalid: ${field} must be before 2300-01-01`, [{ field, message: 'must be before 2300-01-01' }]);
  }
  return ms;
}

/**
 * Numeric query parameters must be plain decimal text. ajv's coercion takes anything `+text`
 * reads ("0x10", " 5", "1e400"), and lets Infinity through integer, minimum and maximum.
 */
function numericText(schema: JsonSchema | undefined, query: Record<string, unknown>): FieldError[] {
  const properties = (schema?.properties ?? {}) as Record<string, { type?: unknown; 'x-message'?: string }>;
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(query)) {
    const property = properties[name];
    if (typeof value !== 'string' || !property) continue;
    const pattern = property.type === 'integer' ? /^-?\d{1,15}$/ : property.type === 'number' ? /^-?\d{1,15}(\.\d{1,15})?$/ : undefined;
    if (pattern && !pattern.test(value)) errors.push({ field: name, message: property['x-message'] ?? `must be a ${property.type}` });
  }
  return errors;
}

/** Unix ms of 2300-01-01T00:00:00Z. */
const LATEST_QUERY_TIME = Date.UTC(2300, 0, 1);

/** Whether the runtime knows `tz` as an IANA time zone (or UTC). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** `/events/3/amount` -> `events[3].amount`: the field name a client sees. */
export function fieldName(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce((name, part) => {
    if (/^\d+$/.test(part)) return `${name}[${part}]`;
    // A key that would read as something else (empty, with dots, brackets or spaces) is quoted.
    if (part === '' || /[.[\]\s"]/.test(part)) return `${name}[${JSON.stringify(part)}]`;
    return name ? `${name}.${part}` : part;
  }, '');
}

const PLAIN_KEYWORDS = new Set(['required', 'additionalProperties', 'maxLength']);

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** ajv's `string,null` -> `a string or null`. */
function typeNames(type: unknown): string {
  const types = (Array.isArray(type) ? type : String(type).split(',')).map((t) => TYPE_NAMES[String(t)] ?? String(t));
  return types.length > 1 ? `${types.slice(0, -1).join(', ')} or ${types.at(-1)}` : types[0]!;
}

/**
 * ajv errors -> one entry per field, in order, without ajv's duplicate anyOf/oneOf noise. A
 * schema's own `x-message` beats ajv's text for the same field (oneOf reports its branches first).
 */
export function toFieldErrors(errors: ErrorObject[]): FieldError[] {
  const byField = new Map<string, { entry: FieldError; custom: boolean }>();
  const result: FieldError[] = [];
  for (const e of errors) {
    const params = e.params as Record<string, unknown>;
    let field = fieldName(e.instancePath);
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') {
      field = fieldName(e.instancePath, String(params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      field = fieldName(e.instancePath, String(params.additionalProperty));
      message = 'is not a known field';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (e.keyword === 'type') {
      message = `must be ${typeNames(params.type)}`;
    } else if (e.keyword === 'maxLength') {
      message = `is too long: at most ${String(params.limit)} characters`;
    } else if (e.keyword === 'if') {
      continue;
    }
    const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
    // A field's own message says what it must look like; a missing, unknown or over-long field is told so plainly.
    const isCustom = typeof custom === 'string' && !PLAIN_KEYWORDS.has(e.keyword);
    if (isCustom) message = custom;
    const earlier = byField.get(field);
    if (earlier) {
      if (isCustom && !earlier.custom) Object.assign(earlier, { custom: true }).entry.message = message;
      continue;
    }
    const entry = { field, message };
    byField.set(field, { entry, custom: isCustom });
    result.push(entry);
  }
  return result;
}
