import { expect } from 'chai';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config.js';

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
    expect(config.bootstrapApiKey).to.equal('a-long-enough-bootstrap-key');
  });

  it('reads the rate limit defaults and the HTTP limits, with defaults', () => {
    const defaults = loadConfig({});
    expect(defaults.rateLimits).to.deep.equal({ requestsPerSecond: 1_000, recordsPerSecond: 100_000 });
    expect(defaults.http).to.deep.equal({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, idleTimeoutMs: 60_000, maxConnections: 1_024 });
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
    expect(set.http).to.deep.equal({ headersTimeoutMs: 2_000, requestTimeoutMs: 4_000, keepAliveTimeoutMs: 65_000, idleTimeoutMs: 90_000, maxConnections: 50 });
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
      loadBlockRows: 10_000,
      loadIntervalMs: 200,
      backlogMaxRows: 3_000_000,
      backlogMaxBytes: 2 * 1024 ** 3,
      readWaitMs: 10_000,
      assetDecimals: {},
    });
    const config = loadConfig({
      DEDUP_WINDOW_DAYS: '14',
      LOAD_BLOCK_ROWS: '50000',
      LOAD_INTERVAL_MS: '1000',
      INGEST_BACKLOG_MAX_ROWS: '100',
      INGEST_BACKLOG_MAX_BYTES: '1048576',
      READ_WAIT_MS: '500',
      ASSET_DECIMALS: 'eth:18, WBTC:8,0xAbC0000000000000000000000000000000000001:9,So11111111111111111111111111111111111111112:9',
    });
    expect(config.ingest).to.deep.equal({
      dedupWindowDays: 14,
      loadBlockRows: 50_000,
      loadIntervalMs: 1000,
      backlogMaxRows: 100,
      backlogMaxBytes: 1_048_576,
      readWaitMs: 500,
      // Symbols upper-cased, 0x addresses lower-cased, other addresses as written.
      assetDecimals: { ETH: 18, WBTC: 8, '0xabc0000000000000000000000000000000000001': 9, So11111111111111111111111111111111111111112: 9 },
    });
  });

  const bad: Record<string, string> = {
    DEDUP_WINDOW_DAYS: '0',
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
    HTTP_IDLE_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '5s,10d',
    WEBHOOK_ALLOW_HTTP: 'yes',
    WEBHOOK_ALLOW_PRIVATE: '2',
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

  it('names every bad variable at once', () => {
    try {
      loadConfig({ PORT: '99999', LOG_LEVEL: 'nope' });
      expect.fail('should throw');
    } catch (err) {
      expect((err as ConfigError).problems).to.have.length(2);
      expect((err as ConfigError).message).to.include('PORT').and.include('LOG_LEVEL');
    }
  });
});
