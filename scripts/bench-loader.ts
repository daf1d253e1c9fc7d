/**
 * npm run bench:loader -- [--blocks 30] [--rows 10000]
 *
 * What a loader block costs ClickHouse, on a temporary embedded store: blocks of realistic rows
 * inserted as the loader does (events, then every rollup, each with its token), first with parts
 * fsynced (fsync_after_insert and fsync_part_directory, the schema's setting) and then without,
 * and prints the median and p90 time per block, rows/s and the process's CPU per row for both (the
 * records shaped as bench:ingest sends them), as the log holds them (RowBinary) and, fsynced, as
 * the TSV chunks of the older log format. Then where a block's time goes: the events insert alone,
 * and the same rows into a table of the same columns with the Null engine (nothing stored: what
 * the engine spends parsing the block, the floor of any loader), each in TSV and in RowBinary, and
 * what encoding a row costs in each format. Run it with the server stopped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { SchemaRegistry } from '../src/http/validation.js';
import { insertBlock } from '../src/ingest/blocks.js';
import { recordToRow, type EventRow } from '../src/ingest/records.js';
import { RowBinaryWriter } from '../src/ingest/rowbinary.js';
import { rowToTsv, TSV_COLUMNS } from '../src/ingest/tsv.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { openStores } from '../src/stores/open.js';

const { values: args } = parseArgs({ options: { blocks: { type: 'string', default: '30' }, rows: { type: 'string', default: '10000' } } });
const BLOCKS = Number(args.blocks);
const ROWS = Number(args.rows);
const TABLES = ['events', 'spend_hourly_by', 'spend_minutely', 'spend_daily_by'];

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-loader-'));
  const config = loadConfig({ DATA_DIR: dataDir });
  const { registry, events, loaderEvents } = await openStores(config, pino({ level: 'warn' }));
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  let pos = 1;
  // What encoding a block's rows costs, per format (CPU µs per row, summed over the blocks).
  const encoding = { tsv: 0, rowBinary: 0, rows: 0 };
  const block = () => {
    const now = Date.now();
    const rows: EventRow[] = [];
    for (let i = 0; i < ROWS; i++) {
      const outcome = recordToRow(
        {
          id: `b${pos}`,
          agent_id: `agent-${pos % 200}`,
          endpoint: `https://svc${pos % 40}.example.com/api/v1/resource/${pos % 40}`,
          method: 'POST',
          team: pos % 3 === 0 ? null : 'research',
          amount: ((pos % 50_000) / 1e6).toFixed(6),
          amount_raw: '0',
          asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
          network: 'eip155:8453',
          scheme: 'exact',
          tx_hash: `0x${(pos * 2654435761).toString(16).padStart(16, '0').slice(-16)}`,
          payer_address: '0x1111111111111111111111111111111111111111',
          payee_address: '0x2222222222222222222222222222222222222222',
          status_code: 200,
          response_time_ms: pos % 800,
          policy_evaluation: pos % 10 === 0 ? 'flagged' : 'allowed',
          created_at: now - (pos % 3_600_000),
          settled_at: now - (pos % 3_600_000),
          metadata: { run: 'bench' },
          tags: pos % 2 === 0 ? [] : ['ops', 'batch'],
        },
        schemas, 'team_bench', 'events', now,
      );
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
      outcome.row.ingest_seq = now * 1000 + i;
      rows.push(outcome.row);
    }
    const firstPos = pos;
    pos += ROWS;
    let started = cpuMicros();
    const body = Buffer.from(rows.map((row, i) => rowToTsv(row, firstPos + i)).join(''));
    encoding.tsv += cpuMicros() - started;
    started = cpuMicros();
    const writer = new RowBinaryWriter(body.length);
    rows.forEach((row, i) => writer.write(row, firstPos + i));
    const binary = Buffer.from(writer.rows);
    encoding.rowBinary += cpuMicros() - started;
    encoding.rows += ROWS;
    return { firstPos, lastPos: pos - 1, body, binary };
  };
  type Block = ReturnType<typeof block>;
  const insertBinary = (table: string, { binary }: Block, settings: Record<string, string | number>) => loaderEvents.insertRowBinary(table, TSV_COLUMNS, binary, settings);
  // The loader's block as the log holds it now (RowBinary), or as chunks of the older format (TSV).
  const asLogged = (b: Block) => insertBlock(loaderEvents, 'bench', b, { format: 'rowbinary2', bytes: b.binary });
  const asTsv = (b: Block) => insertBlock(loaderEvents, 'bench', b, { format: 'tsv', bytes: b.body });
  const measure = async (label: string, insert: (b: Block) => Promise<void>) => {
    const times: number[] = [];
    // The process's CPU while the engine inserts (its threads; the block is built before): what a
    // row costs the machine, beside the wall time, which the engine's parallel threads shorten.
    const cpus: number[] = [];
    for (let b = 0; b < BLOCKS; b++) {
      const b = block();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await insert(b);
      times.push(performance.now() - t0);
      const cpu = process.cpuUsage(cpu0);
      cpus.push(cpu.user + cpu.system);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const wall = median(times);
    const p90 = [...times].sort((a, b) => a - b)[Math.floor(times.length * 0.9)]!;
    console.log(
      `${label.padEnd(28)} median ${wall.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms per ${ROWS}-row block: ${Math.round((ROWS / wall) * 1000).toLocaleString('en-US')} rows/s; ` +
        `CPU ${(median(cpus) / ROWS).toFixed(2)} µs/row`,
    );
  };
  try {
    console.log(`loader blocks into a fresh embedded store, ${BLOCKS} blocks of ${ROWS} rows, ${os.cpus().length} cores`);
    await measure('parts fsynced (the schema)', asLogged);
    await measure('  the same from TSV chunks', asTsv);
    for (const t of TABLES) await events.command(`ALTER TABLE ${t} MODIFY SETTING fsync_after_insert = 0, fsync_part_directory = 0`);
    await measure('parts not fsynced', asLogged);
    let n = 0;
    await measure('events only, not fsynced', ({ body }) => loaderEvents.insertTsv('events', TSV_COLUMNS, body, { insert_deduplication_token: `events-only-${n++}`, input_format_parallel_parsing: 0 }));
    await measure('  the same as RowBinary', (b) => insertBinary('events', b, { insert_deduplication_token: `events-binary-${n++}`, input_format_parallel_parsing: 0 }));
    await events.command('CREATE TABLE events_parse_only AS events ENGINE = Null');
    await measure('parsing only (Null engine)', ({ body }) => loaderEvents.insertTsv('events_parse_only', TSV_COLUMNS, body, { input_format_parallel_parsing: 0 }));
    await measure('  the same as RowBinary', (b) => insertBinary('events_parse_only', b, { input_format_parallel_parsing: 0 }));
    console.log(
      `encoding the rows (JS, CPU per row over all blocks): TSV lines ${(encoding.tsv / encoding.rows).toFixed(2)} µs, ` +
        `RowBinary ${(encoding.rowBinary / encoding.rows).toFixed(2)} µs`,
    );
  } finally {
    registry.close();
    await events.close();
    await loaderEvents.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
