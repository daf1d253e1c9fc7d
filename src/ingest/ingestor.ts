import type { Logger } from 'pino';
import type { AgentActivity } from '../agents/activity.js';
import { ApiError } from '../http/errors.js';
import type { SchemaRegistry } from '../http/validation.js';
import { recordToRow, type EventRow, type IngestSource } from './records.js';
import type { EventWriter } from './writer.js';

/** One invalid field of one record of a batch. */
export interface RecordError {
  index: number;
  field: string;
  message: string;
}

export interface IngestResult {
  ingested: number;
  duplicates: number;
  errors: RecordError[];
  alerts_created: number;
}

/**
 * The one pipeline behind both ingest routes: validate each record on its own, store the valid
 * ones exactly once, register new agents, and report per-record errors.
 */
export class Ingestor {
  constructor(
    private readonly schemas: SchemaRegistry,
    private readonly writer: EventWriter,
    private readonly agents: AgentActivity,
    private readonly logger: Logger,
  ) {}

  async ingest(teamId: string, records: readonly unknown[], source: IngestSource): Promise<IngestResult> {
    const receivedAt = Date.now();
    const rows: EventRow[] = [];
    const errors: RecordError[] = [];
    records.forEach((record, index) => {
      const outcome = recordToRow(record, this.schemas, teamId, source, receivedAt);
      if (outcome.ok) rows.push(outcome.row);
      else for (const e of outcome.errors) errors.push({ index, ...e });
    });
    if (rows.length === 0) {
      throw new ApiError('validation_failed', `No record of the batch is valid (${errors.length} problems, first: ` +
        `records[${errors[0]?.index}].${errors[0]?.field} ${errors[0]?.message})`, errors);
    }
    const outcome = await this.writer.write(rows);
    try {
      this.agents.record(teamId, rows);
    } catch (err) {
      // The events are stored and acknowledged; a missing registry row is recreated by the next event.
      this.logger.error({ err, teamId }, 'recording agent activity failed');
    }
    return { ingested: rows.length, duplicates: outcome.duplicates, errors, alerts_created: outcome.alertsCreated };
  }
}
