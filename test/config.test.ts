import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config.js';
import { tempDir } from './helpers/processes.js';

describe('config', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).to.equal(8080);
    expect(config.host).to.equal('127.0.0.1');
    expect(config.dataDir).to.equal(path.resolve('./data'));
    expect(config.clickhouse).to.deep.equal({
      mode: 'embedded',
      path: path.join(path.resolve('./data'), 'clickhouse'),
      database: 'spendscope',
    });
    expect(config.logLevel).to.equal('info');
    expect(config.maxBodyBytes).to.equal(8 * 1024 * 1024);
    expect(config.bootstrapApiKey).to.equal(undefined);
  });

  it('switches to a ClickHouse server when CLICKHOUSE_URL is set', () => {
    const config = loadConfig({
      CLICKHOUSE_URL: 'http://clickhouse:8123',
      CLICKHOUSE_USER: 'svc',
      CLICKHOUSE_PASSWORD: 'secret',
      CLICKHOUSE_DATABASE: 'spend',
    });
    expect(config.clickhouse).to.deep.equal({
      mode: 'server',
      url: 'http://clickhouse:8123',
      user: 'svc',
      password: 'secret',
      database: 'spend',
    });
  });

  it('DATABASE_URL puts shared state in PostgreSQL, and needs CLICKHOUSE_URL and SECRETS_KEY: instances share neither an embedded engine nor a generated key', () => {
    expect(loadConfig({}).database).to.equal(undefined);
    const key = Buffer.alloc(32, 7).toString('base64');
    const shared = loadConfig({ DATABASE_URL: 'postgres://svc:pw@db:5432/spendscope', CLICKHOUSE_URL: 'http://clickhouse:8123', SECRETS_KEY: key, DATABASE_POOL_MAX: '20' });
    expect(shared.database).to.deep.equal({ url: 'postgres://svc:pw@db:5432/spendscope', poolMax: 20 });
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/x', SECRETS_KEY: key })).to.throw(ConfigError, /DATABASE_URL: needs CLICKHOUSE_URL/);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/x', CLICKHOUSE_URL: 'http://clickhouse:8123' })).to.throw(ConfigError, /DATABASE_URL: needs SECRETS_KEY/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://db/x', CLICKHOUSE_URL: 'http://clickhouse:8123', SECRETS_KEY: key })).to.throw(ConfigError, /DATABASE_URL: must be a postgres:\/\/ URL/);
  });

  it('reads every variable it documents', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATA_DIR: '/tmp/x',
      LOG_LEVEL: 'debug',
      MAX_BODY_BYTES: '2048',
      BOOTSTRAP_API_KEY: 'a-long-enough-bootstrap-key',
    });
    expect(config).to.include({ port: 9000, host: '0.0.0.0', dataDir: '/tmp/x', logLevel: 'debug', maxBodyBytes: 2048 });
    expect(config.bootstrapApiKey).to.deep.equal({ key: 'a-long-enough-bootstrap-key', variable: 'BOOTSTRAP_API_KEY' });
  });

  it('reads the rate limit defaults and the HTTP limits, with defaults', () => {
    const defaults = loadConfig({});
    expect(defaults.rateLimits).to.deep.equal({ requestsPerSecond: 1_000, recordsPerSecond: 100_000 });
    expect(defaults.http).to.deep.equal({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      idleTimeoutMs: 60_000,
      maxConnections: 1_024,
      maxConnectionsPerClient: 128,
      maxNewConnections: 256,
      newConnectionTimeoutMs: 3_000,
    });
    const set = loadConfig({
      RATE_LIMIT_REQUESTS_PER_SECOND: '0',
      RATE_LIMIT_RECORDS_PER_SECOND: '5000',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '4000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
      HTTP_IDLE_TIMEOUT_MS: '90000',
      HTTP_MAX_CONNECTIONS: '50',
    });
    expect(set.rateLimits).to.deep.equal({ requestsPerSecond: 0, recordsPerSecond: 5_000 });
    // The shares follow HTTP_MAX_CONNECTIONS, the new-connection timeout a shorter headers timeout.
    expect(set.http).to.deep.equal({
      headersTimeoutMs: 2_000,
      requestTimeoutMs: 4_000,
      keepAliveTimeoutMs: 65_000,
      idleTimeoutMs: 90_000,
      maxConnections: 50,
      maxConnectionsPerClient: 6,
      maxNewConnections: 12,
      newConnectionTimeoutMs: 2_000,
    });
    const shares = loadConfig({ HTTP_MAX_CONNECTIONS: '100', HTTP_MAX_CONNECTIONS_PER_CLIENT: '100', HTTP_MAX_NEW_CONNECTIONS: '30', HTTP_NEW_CONNECTION_TIMEOUT_MS: '500' }).http;
    expect(shares).to.include({ maxConnections: 100, maxConnectionsPerClient: 100, maxNewConnections: 30, newConnectionTimeoutMs: 500 });
    expect(() => loadConfig({ HTTP_MAX_CONNECTIONS: '100', HTTP_MAX_CONNECTIONS_PER_CLIENT: '101' })).to.throw(ConfigError, /HTTP_MAX_CONNECTIONS_PER_CLIENT: must not exceed HTTP_MAX_CONNECTIONS \(100\), got 101/);
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_NEW_CONNECTION_TIMEOUT_MS: '2000' })).to.throw(ConfigError, /HTTP_NEW_CONNECTION_TIMEOUT_MS: must not exceed HTTP_HEADERS_TIMEOUT_MS \(1000\)/);
  });

  it('bounds the BI interface by the thread pool: per holder, team and process, and a memory total each query is carved from', () => {
    const pool = process.env.UV_THREADPOOL_SIZE;
    try {
      process.env.UV_THREADPOOL_SIZE = '4';
      const small = loadConfig({}).bi.limits;
      expect(small).to.include({ concurrentQueriesPerKey: 2, concurrentQueriesPerTeam: 4, concurrentQueries: 2, totalMemoryBytes: Math.floor(os.totalmem() / 4) });
      expect(small.maxMemoryBytes).to.equal(Math.min(4 * 1024 ** 3, Math.floor(os.totalmem() / 4 / 2)));
      expect(() => loadConfig({ BI_MAX_CONCURRENT_QUERIES: '4' })).to.throw(ConfigError, /BI_MAX_CONCURRENT_QUERIES: at most 2 with UV_THREADPOOL_SIZE 4/);
      process.env.UV_THREADPOOL_SIZE = '8';
      expect(loadConfig({}).bi.limits.concurrentQueries).to.equal(4);
      const set = loadConfig({ BI_MAX_CONCURRENT_QUERIES: '6', BI_MAX_TOTAL_MEMORY_BYTES: String(6 * 1024 ** 3), BI_CONCURRENT_QUERIES_PER_TEAM: '3' }).bi.limits;
      expect(set).to.include({ concurrentQueries: 6, concurrentQueriesPerTeam: 3, totalMemoryBytes: 6 * 1024 ** 3, maxMemoryBytes: 1024 ** 3 });
      expect(() => loadConfig({ BI_MAX_TOTAL_MEMORY_BYTES: String(100 * 1024 ** 2), BI_MAX_MEMORY_BYTES: String(1024 ** 3) })).to.throw(ConfigError, /BI_MAX_TOTAL_MEMORY_BYTES/);
    } finally {
      if (pool === undefined) delete process.env.UV_THREADPOOL_SIZE;
      else process.env.UV_THREADPOOL_SIZE = pool;
    }
  });

  it('reads the webhook settings, with defaults', () => {
    expect(loadConfig({}).webhooks).to.deep.equal({
      allowHttp: false,
      allowPrivate: false,
      retrySchedule: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    });
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '200ms, 200ms,1s', WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks).to.deep.equal({
      allowHttp: true,
      allowPrivate: true,
      retrySchedule: [200, 200, 1_000],
    });
  });

  it('reads the anomaly thresholds, with defaults', () => {
    expect(loadConfig({}).anomalies).to.deep.equal({ spikeFactor: 10, spikeBaseline: 50, loopCalls: 300, loopSeconds: 60, newPayeeLearningHours: 24 });
    const config = loadConfig({
      ANOMALY_SPIKE_FACTOR: '20',
      ANOMALY_SPIKE_BASELINE: '100',
      ANOMALY_LOOP_CALLS: '1000',
      ANOMALY_LOOP_SECONDS: '30',
      ANOMALY_NEW_PAYEE_LEARNING_HOURS: '0',
    });
    expect(config.anomalies).to.deep.equal({ spikeFactor: 20, spikeBaseline: 100, loopCalls: 1000, loopSeconds: 30, newPayeeLearningHours: 0 });
  });

  it('reads the ingest log settings, with defaults', () => {
    expect(loadConfig({}).ingest).to.deep.equal({
      dedupWindowDays: 7,
      dedupLevel0Keys: 250_000,
      loadBlockRows: 25_000,
      loadIntervalMs: 500,
      backlogMaxRows: 3_000_000,
      backlogMaxBytes: 2 * 1024 ** 3,
      readWaitMs: 10_000,
      assetDecimals: {},
      groupMaxRows: 2_000,
    });
    const config = loadConfig({
      DEDUP_WINDOW_DAYS: '14',
      DEDUP_LEVEL0_KEYS: '1000',
      LOAD_BLOCK_ROWS: '50000',
      LOAD_INTERVAL_MS: '1000',
      INGEST_BACKLOG_MAX_ROWS: '100',
      INGEST_BACKLOG_MAX_BYTES: '1048576',
      READ_WAIT_MS: '500',
      INGEST_GROUP_MAX_ROWS: '500',
      ASSET_DECIMALS: 'eth:18, WBTC:8,0xAbC0000000000000000000000000000000000001:9,So11111111111111111111111111111111111111112:9',
    });
    expect(config.ingest).to.deep.equal({
      dedupWindowDays: 14,
      dedupLevel0Keys: 1000,
      loadBlockRows: 50_000,
      loadIntervalMs: 1000,
      backlogMaxRows: 100,
      backlogMaxBytes: 1_048_576,
      readWaitMs: 500,
      // Symbols upper-cased, 0x addresses lower-cased, other addresses as written.
      assetDecimals: { ETH: 18, WBTC: 8, '0xabc0000000000000000000000000000000000001': 9, So11111111111111111111111111111111111111112: 9 },
      groupMaxRows: 500,
    });
  });

  it('reads the evaluation bounds, with defaults', () => {
    expect(loadConfig({}).evaluation).to.deep.equal({ maxActivePoliciesPerTeam: 1_000, maxAlertsPerCommit: 100 });
    const config = loadConfig({ MAX_ACTIVE_POLICIES_PER_TEAM: '2000', MAX_ALERTS_PER_COMMIT: '10' });
    expect(config.evaluation).to.deep.equal({ maxActivePoliciesPerTeam: 2_000, maxAlertsPerCommit: 10 });
  });

  const bad: Record<string, string> = {
    DEDUP_WINDOW_DAYS: '0',
    DEDUP_LEVEL0_KEYS: '10',
    LOAD_BLOCK_ROWS: 'many',
    INGEST_BACKLOG_MAX_BYTES: '10',
    PORT: 'eighty',
    MAX_BODY_BYTES: '-5',
    LOG_LEVEL: 'loud',
    CLICKHOUSE_URL: 'ftp://clickhouse',
    CLICKHOUSE_DATABASE: 'drop table;',
    BOOTSTRAP_API_KEY: 'short',
    SHUTDOWN_TIMEOUT_MS: '1.5',
    ANOMALY_SPIKE_FACTOR: '1',
    ANOMALY_LOOP_SECONDS: '0',
    ASSET_DECIMALS: 'ETH:19',
    RATE_LIMIT_RECORDS_PER_SECOND: '-1',
    RATE_LIMIT_REQUESTS_PER_SECOND: 'lots',
    HTTP_REQUEST_TIMEOUT_MS: '5',
    HTTP_HEADERS_TIMEOUT_MS: '60000',
    HTTP_MAX_CONNECTIONS: '0',
    HTTP_MAX_CONNECTIONS_PER_CLIENT: '0',
    HTTP_MAX_NEW_CONNECTIONS: '2000',
    HTTP_NEW_CONNECTION_TIMEOUT_MS: '50',
    HTTP_IDLE_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '5s,10d',
    WEBHOOK_ALLOW_HTTP: 'yes',
    WEBHOOK_ALLOW_PRIVATE: '2',
    MAX_ACTIVE_POLICIES_PER_TEAM: '0',
    MAX_ALERTS_PER_COMMIT: 'many',
    INGEST_GROUP_MAX_ROWS: '0',
  };
  for (const [name, value] of Object.entries(bad)) {
    it(`rejects a bad ${name}, naming it`, () => {
      expect(() => loadConfig({ [name]: value }))
        .to.throw(ConfigError)
        .with.property('message')
        .that.includes(name);
    });
  }

  it('rejects an ASSET_DECIMALS entry without decimals, naming the entry', () => {
    expect(() => loadConfig({ ASSET_DECIMALS: 'ETH:18,WBTC' })).to.throw(ConfigError).with.property('message').that.includes('"WBTC"');
  });

  describe('the chains records are checked against (CHAIN_RPC_URLS and the settings beside it)', () => {
    const urls = (value: Record<string, unknown>) => JSON.stringify(value);
    const problemsOf = (env: Record<string, string>): string[] => {
      try {
        loadConfig(env);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems;
        throw err;
      }
      return expect.fail('the configuration was accepted');
    };

    it('without CHAIN_RPC_URLS there is no chains config: nothing is checked, no request leaves the machine', () => {
      expect(loadConfig({}).chains).to.equal(undefined);
      expect(loadConfig({ CHAIN_RPC_URLS: '  ' }).chains).to.equal(undefined);
      // The tuning settings alone change nothing.
      expect(loadConfig({ SETTLEMENT_POLL_MS: '500', CHAIN_RPC_BATCH: '10' }).chains).to.equal(undefined);
    });

    it('reads CHAIN_RPC_URLS and every setting beside it, with the documented defaults', () => {
      const defaults = loadConfig({ CHAIN_RPC_URLS: urls({ 'eip155:8453': 'https://mainnet.base.org', 'eip155:31337': 'http://127.0.0.1:8545' }) }).chains;
      expect(defaults).to.deep.equal({
        rpcUrls: { 'eip155:8453': 'https://mainnet.base.org', 'eip155:31337': 'http://127.0.0.1:8545' },
        confirmations: { 'eip155:8453': 12, 'eip155:31337': 1 },
        graceMs: 600_000,
        pollMs: 2_000,
        logRangeBlocks: 2_000,
        rpcConcurrency: 4,
        rpcTimeoutMs: 10_000,
        rpcBatchSize: 50,
        reorgDepth: 64,
      });
      const set = loadConfig({
        CHAIN_RPC_URLS: urls({ 'eip155:1': 'https://eth.example' }),
        SETTLEMENT_GRACE_S: '30',
        SETTLEMENT_POLL_MS: '200',
        CHAIN_LOG_RANGE: '500',
        CHAIN_RPC_CONCURRENCY: '2',
        CHAIN_RPC_TIMEOUT_MS: '1500',
        CHAIN_RPC_BATCH: '20',
        CHAIN_REORG_DEPTH: '128',
      }).chains;
      expect(set).to.deep.include({ graceMs: 30_000, pollMs: 200, logRangeBlocks: 500, rpcConcurrency: 2, rpcTimeoutMs: 1_500, rpcBatchSize: 20, reorgDepth: 128 });
      expect(problemsOf({ CHAIN_RPC_URLS: urls({ 'eip155:1': 'https://eth.example' }), CHAIN_RPC_BATCH: '0', SETTLEMENT_POLL_MS: '10' })).to.have.members([
        'CHAIN_RPC_BATCH: must be a whole number from 1 to 1000, got "0"',
        'SETTLEMENT_POLL_MS: must be a whole number from 50 to 600000, got "10"',
      ]);
    });

    it('CHAIN_RPC_URLS: bad JSON, a non-EVM network and a non-http URL are each an error naming it', () => {
      expect(problemsOf({ CHAIN_RPC_URLS: '{eip155:8453: https://mainnet.base.org}' })).to.deep.equal([
        'CHAIN_RPC_URLS: must be a JSON object of CAIP-2 network to JSON-RPC URL, e.g. {"eip155:8453": "https://mainnet.base.org"}',
      ]);
      for (const notAnObject of ['["https://mainnet.base.org"]', '{}', '"https://mainnet.base.org"', 'null']) {
        expect(problemsOf({ CHAIN_RPC_URLS: notAnObject }), notAnObject).to.deep.equal(['CHAIN_RPC_URLS: must be a JSON object with at least one CAIP-2 network, e.g. {"eip155:8453": "https://mainnet.base.org"}']);
      }
      const problems = problemsOf({
        CHAIN_RPC_URLS: urls({
          'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp': 'https://api.mainnet-beta.solana.com',
          'eip155:0': 'https://zero.example',
          '8453': 'https://mainnet.base.org',
          'eip155:10': 'ws://optimism.example',
          'eip155:137': 'not a url',
          'eip155:42161': 42161,
          'eip155:8453': 'https://mainnet.base.org',
        }),
      });
      expect(problems).to.have.members([
        'CHAIN_RPC_URLS: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" must be an EVM network as CAIP-2 (eip155:<chain id>); other chains cannot be checked yet',
        'CHAIN_RPC_URLS: "eip155:0" must be an EVM network as CAIP-2 (eip155:<chain id>); other chains cannot be checked yet',
        'CHAIN_RPC_URLS: "8453" must be an EVM network as CAIP-2 (eip155:<chain id>); other chains cannot be checked yet',
        'CHAIN_RPC_URLS: the URL of eip155:10 must be an http:// or https:// URL',
        'CHAIN_RPC_URLS: the URL of eip155:137 must be an http:// or https:// URL',
        'CHAIN_RPC_URLS: the URL of eip155:42161 must be an http:// or https:// URL',
      ]);
      expect(() => loadConfig({ CHAIN_RPC_URLS: urls({ 'eip155:10': 'ftp://optimism.example' }) })).to.throw(ConfigError, /CHAIN_RPC_URLS: the URL of eip155:10 must be an http:\/\/ or https:\/\/ URL/);
    });

    it('CHAIN_CONFIRMATIONS: 1 on local chains and 12 on public ones unless set, as one number for all or a JSON map per network', () => {
      const CHAIN_RPC_URLS = urls({ 'eip155:31337': 'http://127.0.0.1:8545', 'eip155:1337': 'http://127.0.0.1:7545', 'eip155:8453': 'https://mainnet.base.org', 'eip155:1': 'https://eth.example' });
      expect(loadConfig({ CHAIN_RPC_URLS }).chains!.confirmations).to.deep.equal({ 'eip155:31337': 1, 'eip155:1337': 1, 'eip155:8453': 12, 'eip155:1': 12 });
      expect(loadConfig({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: '3' }).chains!.confirmations).to.deep.equal({ 'eip155:31337': 3, 'eip155:1337': 3, 'eip155:8453': 3, 'eip155:1': 3 });
      // A map sets the networks it names; the others keep their defaults.
      expect(loadConfig({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: urls({ 'eip155:8453': 5, 'eip155:31337': 2 }) }).chains!.confirmations).to.deep.equal({
        'eip155:31337': 2,
        'eip155:1337': 1,
        'eip155:8453': 5,
        'eip155:1': 12,
      });
      expect(problemsOf({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: urls({ 'eip155:10': 3 }) })).to.deep.equal(['CHAIN_CONFIRMATIONS: "eip155:10" is not in CHAIN_RPC_URLS']);
      expect(problemsOf({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: urls({ 'eip155:8453': 0, 'eip155:1': 2.5 }) })).to.deep.equal([
        'CHAIN_CONFIRMATIONS: eip155:8453 must be a whole number from 1 to 10000',
        'CHAIN_CONFIRMATIONS: eip155:1 must be a whole number from 1 to 10000',
      ]);
      expect(problemsOf({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: '0' })).to.deep.equal(['CHAIN_CONFIRMATIONS: must be a whole number from 1 to 10000, got "0"']);
      expect(problemsOf({ CHAIN_RPC_URLS, CHAIN_CONFIRMATIONS: 'many' })).to.deep.equal(['CHAIN_CONFIRMATIONS: must be a number, or a JSON object of CAIP-2 network to a number, e.g. {"eip155:8453": 10}']);
    });

    it('SETTLEMENT_GRACE_S or CHAIN_CONFIRMATIONS without CHAIN_RPC_URLS is an error: nothing would use them', () => {
      expect(problemsOf({ SETTLEMENT_GRACE_S: '60' })).to.deep.equal(['SETTLEMENT_GRACE_S: needs CHAIN_RPC_URLS (the chains to check records against)']);
      expect(problemsOf({ SETTLEMENT_GRACE_S: '60', CHAIN_CONFIRMATIONS: '3' })).to.have.members([
        'SETTLEMENT_GRACE_S: needs CHAIN_RPC_URLS (the chains to check records against)',
        'CHAIN_CONFIRMATIONS: needs CHAIN_RPC_URLS (the chains to check records against)',
      ]);
      expect(loadConfig({ CHAIN_RPC_URLS: urls({ 'eip155:8453': 'https://mainnet.base.org' }), SETTLEMENT_GRACE_S: '60' }).chains!.graceMs).to.equal(60_000);
    });
  });

  it('names every bad variable at once', () => {
    try {
      loadConfig({ PORT: '99999', LOG_LEVEL: 'nope' });
      expect.fail('should throw');
    } catch (err) {
      expect((err as ConfigError).problems).to.have.length(2);
      expect((err as ConfigError).message).to.include('PORT').and.include('LOG_LEVEL');
    }
  });

  describe('credentials: the bootstrap key and the key of the secrets at rest', () => {
    const secretFile = (content: string) => {
      const file = path.join(tempDir('secret'), 'secret');
      fs.writeFileSync(file, content, { mode: 0o600 });
      return file;
    };

    it('BOOTSTRAP_API_KEY_FILE: the key is the file content, one trailing newline dropped', () => {
      const config = loadConfig({ BOOTSTRAP_API_KEY_FILE: secretFile('key-from-a-docker-secret-0123\n') });
      expect(config.bootstrapApiKey).to.deep.equal({ key: 'key-from-a-docker-secret-0123', variable: 'BOOTSTRAP_API_KEY_FILE' });
    });

    it('both BOOTSTRAP_API_KEY and its _FILE, an unreadable file, or a too short key are errors naming the variable', () => {
      expect(() => loadConfig({ BOOTSTRAP_API_KEY: 'a-long-enough-bootstrap-key', BOOTSTRAP_API_KEY_FILE: secretFile('another-long-enough-key') }))
        .to.throw(ConfigError, /BOOTSTRAP_API_KEY, BOOTSTRAP_API_KEY_FILE: set one of them, not both/);
      expect(() => loadConfig({ BOOTSTRAP_API_KEY_FILE: '/nonexistent/bootstrap-key' })).to.throw(ConfigError, /BOOTSTRAP_API_KEY_FILE: cannot read "\/nonexistent\/bootstrap-key" \(ENOENT\)/);
      expect(() => loadConfig({ BOOTSTRAP_API_KEY_FILE: secretFile('short\n') })).to.throw(ConfigError, /BOOTSTRAP_API_KEY_FILE: must be 16 to 256 characters/);
    });

    it('OPERATOR_API_KEY_FILE: only the SHA-256 of the key is kept; a short key, one with spaces, or the bootstrap key itself are refused', () => {
      const key = crypto.randomBytes(32).toString('hex');
      const env: Record<string, string | undefined> = { OPERATOR_API_KEY_FILE: secretFile(`${key}\n`) };
      const config = loadConfig(env);
      expect(config.operatorKeyHash).to.deep.equal(crypto.createHash('sha256').update(key).digest());
      expect(JSON.stringify(config)).not.to.include(key);
      expect(env).to.deep.equal({}, 'taken out of the environment');
      expect(loadConfig({}).operatorKeyHash).to.equal(undefined);
      expect(() => loadConfig({ OPERATOR_API_KEY: 'x'.repeat(31) })).to.throw(ConfigError, /OPERATOR_API_KEY: must be 32 to 256 characters without spaces/);
      expect(() => loadConfig({ OPERATOR_API_KEY_FILE: secretFile(`${key.slice(0, 20)} ${key}`) })).to.throw(ConfigError, /OPERATOR_API_KEY_FILE: must be 32 to 256/);
      expect(() => loadConfig({ OPERATOR_API_KEY: key, BOOTSTRAP_API_KEY: key })).to.throw(ConfigError, /OPERATOR_API_KEY: must differ from BOOTSTRAP_API_KEY/);
    });

    it('SECRETS_KEY and SECRETS_KEY_PREVIOUS, or their _FILE: base64 of 32 bytes, errors naming the variable', () => {
      const current = crypto.randomBytes(32);
      const previous = crypto.randomBytes(32);
      const config = loadConfig({ SECRETS_KEY: current.toString('base64'), SECRETS_KEY_PREVIOUS_FILE: secretFile(`${previous.toString('base64')}\n`) });
      expect(config.secretsKeys.current).to.deep.equal({ bytes: current, source: 'SECRETS_KEY' });
      expect(config.secretsKeys.previous).to.deep.equal({ bytes: previous, source: 'SECRETS_KEY_PREVIOUS_FILE' });
      expect(loadConfig({}).secretsKeys).to.deep.equal({ current: undefined, previous: undefined });
      expect(() => loadConfig({ SECRETS_KEY: crypto.randomBytes(16).toString('base64') })).to.throw(ConfigError, /SECRETS_KEY: must be the base64 of 32 random bytes/);
      expect(() => loadConfig({ SECRETS_KEY_FILE: secretFile('not a key') })).to.throw(ConfigError, /SECRETS_KEY_FILE: must be the base64/);
      expect(() => loadConfig({ SECRETS_KEY: current.toString('base64'), SECRETS_KEY_FILE: secretFile(current.toString('base64')) }))
        .to.throw(ConfigError, /SECRETS_KEY, SECRETS_KEY_FILE: set one of them, not both/);
    });

    it('the URLs and password of the stores are credentials too: each may be a _FILE, and none is left in the environment', () => {
      const env: Record<string, string | undefined> = {
        DATABASE_URL_FILE: secretFile('postgres://svc:pw-from-a-file@db:5432/spendscope\n'),
        CLICKHOUSE_URL_FILE: secretFile('http://svc:ch-pw-in-url@clickhouse:8123\n'),
        CLICKHOUSE_PASSWORD_FILE: secretFile('ch-pw-from-a-file\n'),
        SECRETS_KEY: crypto.randomBytes(32).toString('base64'),
      };
      const config = loadConfig(env);
      expect(config.database?.url).to.equal('postgres://svc:pw-from-a-file@db:5432/spendscope');
      expect(config.clickhouse).to.include({ mode: 'server', url: 'http://svc:ch-pw-in-url@clickhouse:8123', password: 'ch-pw-from-a-file' });
      expect(env).to.deep.equal({});
      const direct: Record<string, string | undefined> = { CLICKHOUSE_PASSWORD: 'pw', DATABASE_URL: 'postgres://a:b@db/x', CLICKHOUSE_URL: 'http://clickhouse:8123', SECRETS_KEY: crypto.randomBytes(32).toString('base64') };
      loadConfig(direct);
      expect(direct).to.deep.equal({});
      expect(() => loadConfig({ DATABASE_URL_FILE: secretFile('mysql://db/x') })).to.throw(ConfigError, /DATABASE_URL_FILE: must be a postgres:\/\/ URL/);
      expect(() => loadConfig({ CLICKHOUSE_PASSWORD: 'pw', CLICKHOUSE_PASSWORD_FILE: secretFile('pw') })).to.throw(ConfigError, /CLICKHOUSE_PASSWORD, CLICKHOUSE_PASSWORD_FILE: set one of them, not both/);
    });

    it('takes them out of process.env once read: a child process started afterwards does not inherit them', () => {
      const names = ['BOOTSTRAP_API_KEY', 'SECRETS_KEY', 'SECRETS_KEY_PREVIOUS_FILE'];
      const saved = Object.fromEntries(Object.entries(process.env));
      try {
        process.env.BOOTSTRAP_API_KEY = 'a-long-enough-bootstrap-key';
        process.env.SECRETS_KEY = crypto.randomBytes(32).toString('base64');
        process.env.SECRETS_KEY_PREVIOUS_FILE = secretFile(crypto.randomBytes(32).toString('base64'));
        const config = loadConfig();
        expect(config.bootstrapApiKey?.key).to.equal('a-long-enough-bootstrap-key');
        expect(config.secretsKeys.current).to.not.equal(undefined);
        for (const name of names) expect(process.env, name).to.not.have.property(name);
        const inherited = JSON.parse(execFileSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(Object.keys(process.env)))'], { encoding: 'utf8' })) as string[];
        expect(inherited.filter((name) => name.startsWith('BOOTSTRAP_') || name.startsWith('SECRETS_'))).to.deep.equal([]);
      } finally {
        for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
        Object.assign(process.env, saved);
      }
    });
  });
});
