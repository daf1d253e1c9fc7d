/**
 * Generators of bad (and some good) requests for every route, as a new user or a broken client
 * would send them: malformed percent-encoding, lone surrogates, numbers far beyond what a field
 * takes, prototype keys, wrong types at any depth, wrong content types, broken JSON.
 */
import fc from 'fast-check';
import type { RouteSpec } from '../../src/http/routes.js';
import { API_PREFIXES } from '../../src/http/routes.js';

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The route it was drawn for (the method or path may have been changed on purpose). */
  route: string;
}

/** A number as written in JSON text, beyond what any field takes; marked so it survives JSON.stringify. */
const RAW = '\u0000raw:';
const rawNumbers = [
  '1e400', '-1e400', '123456789012345678901234567890', '-123456789012345678901234567890', '9007199254740993',
  '18446744073709551616', '1e-400', '-0', '0.0000000000000000000000001', '4294967296', '65536', '2147483648', '1.5e308',
];

/** Text fragments that break decoders and parsers. */
const nastyText = [
  '%', '%zz', '%E0%A4', '%ED%A0%80', '%C0%AF', '%00', '%2F', '%25', '%u0041', '%FF%FE', '..', '../..', '%2e%2e',
  'Ω', '\ud800', '\udfff', '\ud83d', '\u0000', '\u202e', '💸', ' ', '', '\n', 'null', 'undefined', 'NaN', 'Infinity',
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', "' OR 1=1 --", '"; DROP TABLE x; --', '\\', '{}', '[]',
];

const nastyKeys = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'length', '', ' ', '\ud800', 'a.b', '$ref'];

/** Any JSON-ish value, with the values that break code most often over-represented. */
export const nastyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...nastyText),
    fc.constantFrom(...rawNumbers).map((n) => RAW + n),
    fc.constantFrom(0, -1, 1, 0.5, -0.5, 2 ** 31, 2 ** 53, -(2 ** 53), Number.MAX_SAFE_INTEGER, 1e21, 100, 101, 1000, 65535, 999),
    fc.constantFrom(null, true, false),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom('2026-11-23T10:00:00Z', '2026-02-30T25:61:00Z', '1795132800000', '-1', '0x10', '1e3', '0.001', '-0.001', '1.0000000000000000001'),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...nastyKeys), fc.string({ maxLength: 8 })), tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** Serialises with raw numbers written as they are (`1e400`, not a string). */
export function jsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0000raw:([^"]*)"/g, '$1');
}

/** Every path into a value, to mutate one place of a good body. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy: unknown = structuredClone(root);
  let node = copy as Record<string | number, unknown>;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  // defineProperty: `__proto__` must become an own key, as JSON.parse makes it.
  Object.defineProperty(node, path.at(-1)!, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** A body for a route: a good example changed in one or two places, or anything at all. */
function bodyArb(example: unknown): fc.Arbitrary<{ text: string | Buffer; contentType: string | undefined }> {
  const paths = pathsOf(example);
  const mutated = fc
    .tuple(fc.constantFrom(...paths), nastyValue, fc.option(fc.tuple(fc.constantFrom(...paths), nastyValue), { nil: undefined }))
    .map(([p, v, second]) => {
      let body = setAt(example, p, v);
      if (second) {
        try {
          body = setAt(body, second[0], second[1]);
        } catch {
          // The first change removed the place of the second.
        }
      }
      return jsonText(body);
    });
  const addedKey = fc.tuple(fc.constantFrom(...nastyKeys), nastyValue).map(([k, v]) => {
    const body = setAt(example && typeof example === 'object' ? example : {}, [k], v);
    return jsonText(body);
  });
  const text = fc.oneof(
    { weight: 6, arbitrary: mutated },
    { weight: 2, arbitrary: addedKey },
    { weight: 1, arbitrary: fc.constant(jsonText(example)) },
    { weight: 1, arbitrary: nastyValue.map(jsonText) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', '{', '{"a":', 'null', '"x"', '[', '{"events": [', '\ufeff{}', '{"a":1}{"b":2}', '{\'a\':1}', 'NaN', '{"a": 1e400}', '[[[[[[[[[[]]]]]]]]]]'),
    },
  );
  const bytes = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b));
  const contentType = fc.constantFrom<string | undefined>(
    'application/json', 'application/json', 'application/json', 'application/json', 'application/json; charset=utf-8',
    'application/json; charset=latin1', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded',
    'application/merge-patch+json', undefined, 'application/json; charset=%zz', 'multipart/form-data; boundary=x',
  );
  return fc.tuple(fc.oneof({ weight: 12, arbitrary: text }, { weight: 1, arbitrary: bytes }), contentType).map(([t, contentType]) => ({ text: t, contentType }));
}

/** Percent-encodes text, except for a few spans left as they are to break decoders. */
const queryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...nastyText.filter((t) => /^[\x21-\x7e]*$/.test(t))),
  fc.constantFrom(...rawNumbers),
  nastyValue.map((v) => encodeURIComponent(typeof v === 'string' ? v.replace(/[\ud800-\udfff]/g, '') : jsonText(v))),
  fc.constantFrom('0', '1', '-1', '10', '100', '1000', '1001', '1.5', 'true', 'day', 'week', 'month', 'minute', 'hour', 'UTC', 'Europe%2FLisbon', 'Mars%2FBase', 'url', 'open', 'resolved'),
);

function queryArb(names: string[]): fc.Arbitrary<string> {
  const name = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...(names.length ? names : ['limit'])) }, { weight: 1, arbitrary: fc.constantFrom(...nastyKeys.filter((k) => !/[\ud800-\udfff]/.test(k)).map(encodeURIComponent), '%zz', 'a[b]', 'limit[]', '%ED%A0%80') });
  return fc.array(fc.tuple(name, queryValue), { maxLength: 4 }).map((pairs) => (pairs.length ? '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&') : ''));
}

const pathParam: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...nastyText.filter((t) => /^[\x21-\x7e]*$/.test(t) && t !== '' && !t.includes('/'))),
  fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '')) || 'x'),
  fc.constantFrom('a1', 'pol_nothing', 'alert_nothing', 'key_nothing', 'x'.repeat(5000)),
);

/** A request for one of the routes, usually well addressed and with a key, with bad input somewhere. */
export function requestArb(routes: readonly RouteSpec[], schemas: Map<string, { properties?: Record<string, unknown> }>, key: (spec: RouteSpec) => string): fc.Arbitrary<RawRequest> {
  const perRoute = routes.map((spec) => {
    const names = spec.query ? Object.keys(schemas.get(spec.query)?.properties ?? {}) : [];
    const example = spec.bodyExample ?? {};
    return fc
      .record({
        prefix: fc.constantFrom(...(spec.prefixes ?? API_PREFIXES)),
        params: fc.array(pathParam, { minLength: 2, maxLength: 2 }),
        query: queryArb(names),
        body: spec.body ? bodyArb(example) : fc.constant(undefined),
        auth: fc.oneof({ weight: 16, arbitrary: fc.constant('key') }, { weight: 1, arbitrary: fc.constantFrom('none', 'junk', 'basic', 'bearer-nasty') }),
        method: fc.oneof({ weight: 12, arbitrary: fc.constant(spec.method) }, { weight: 1, arbitrary: fc.constantFrom('put', 'patch', 'delete', 'post', 'get') }),
      })
      .map(({ prefix, params, query, body, auth, method }): RawRequest => {
        let i = 0;
        const path = prefix + spec.path.replace(/:[a-z]+/g, () => params[i++]!) + query;
        const headers: Record<string, string> = {};
        if (auth === 'key') headers.Authorization = `Bearer ${key(spec)}`;
        if (auth === 'junk') headers.Authorization = 'Bearer ss_notakey';
        if (auth === 'basic') headers.Authorization = 'Basic dXNlcjpwYXNz';
        if (auth === 'bearer-nasty') headers.Authorization = 'Bearer %ED%A0%80\u00ff';
        let bytes: Buffer | undefined;
        if (body) {
          bytes = typeof body.text === 'string' ? Buffer.from(body.text, 'utf8') : body.text;
          if (body.contentType) headers['Content-Type'] = body.contentType;
        }
        return { method: method.toUpperCase(), path, headers, body: bytes, route: `${spec.method.toUpperCase()} ${spec.path}` };
      });
  });
  return fc.oneof(...perRoute);
}
