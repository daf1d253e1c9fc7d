/**
 * The request schemas compile on first use, not at start (1.3 s of every start): this is where a
 * schema strict mode refuses is caught, before a request could meet it as a 500.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SchemaRegistry } from '../../src/http/validation.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { ROUTES } from '../../src/routes.js';

describe('request schemas', () => {
  it('every schema of schema/api compiles, as a body and as a query, under strict mode', () => {
    const registry = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
    expect(registry.schemas.size).to.be.above(50);
    expect(() => registry.compileAll()).to.not.throw();
  });

  it('every schema a route names is there', () => {
    const registry = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
    const named = ROUTES.flatMap((r) => [r.body, r.query].filter((id): id is string => typeof id === 'string'));
    expect(named.length).to.be.above(20);
    expect(named.filter((id) => !registry.schemas.has(id))).to.deep.equal([]);
  });

  it('a schema strict mode refuses is caught by compileAll and by its first use, naming the keyword; one the meta-schema refuses, at start', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-schemas-'));
    try {
      fs.writeFileSync(
        path.join(dir, 'typo.json'),
        JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'typo.json', type: 'object', properties: { n: { type: 'integer', minimun: 1 } } }),
      );
      // Starting takes it: the meta-schema allows unknown keywords.
      const registry = new SchemaRegistry(dir);
      expect(() => registry.compileAll()).to.throw(/unknown keyword: "minimun"/);
      expect(() => new SchemaRegistry(dir).body('typo.json', { n: 2 })).to.throw(/unknown keyword: "minimun"/);
      // One the meta-schema refuses stops the start.
      fs.writeFileSync(path.join(dir, 'typo.json'), JSON.stringify({ $id: 'typo.json', type: 'integr' }));
      expect(() => new SchemaRegistry(dir)).to.throw(/schema is invalid/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
