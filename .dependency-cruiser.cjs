/**
 * The layers of src/, bottom to top (docs/development.md): a module imports only from its own layer
 * or those below, and nothing imports in a cycle. `npm test` runs this check first.
 */
const LAYERS = [
  ['domain', '^src/domain/'],
  ['config', '^src/(config|config-types|config-chains|paths)\\.ts$'],
  ['stores', '^src/stores/'],
  ['http', '^src/(http|limits|metrics)/'],
  ['features', '^src/(teams|agents|policies|alerts|webhooks|authorizations|evaluation|budgets|rates|analytics|ingest|audit|audit-log|operator|health|settlements)/'],
  ['edges', '^src/(routes\\.ts|mcp/|clickhouse-http/|dashboard/|docs/)'],
  ['composition', '^src/(deps|app|main|server)\\.ts$'],
];

const upward = LAYERS.flatMap(([name, path], i) =>
  LAYERS.slice(i + 1).map(([above, abovePath]) => ({
    name: `${name}-not-up-to-${above}`,
    comment: `${name} is below ${above}: it may not import it`,
    severity: 'error',
    from: { path },
    to: { path: abovePath },
  })),
);

// A module of src/ in no layer would escape every rule above: its folder must be added to one.
const everyLayer = LAYERS.map(([, path]) => `(${path})`).join('|');

module.exports = {
  forbidden: [
    {
      name: 'in-a-layer',
      comment: 'every module of src/ belongs to a layer (add its folder to LAYERS)',
      severity: 'error',
      from: { path: '^src/', pathNot: everyLayer },
      to: {},
    },
    { name: 'no-circular', comment: 'imports go one way', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'domain-imports-nothing',
      comment: 'the domain kernel imports nothing of the project',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/', pathNot: '^src/domain/' },
    },
    ...upward,
  ],
  options: {
    // TypeScript 7 is not a parser dependency-cruiser reads; swc parses the sources, type imports included.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
