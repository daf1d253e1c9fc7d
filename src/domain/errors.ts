/**
 * Errors the engine (ingest, evaluation, authorizations) throws, in its own terms; the HTTP edge
 * (src/http/errors.ts) turns each into a status, headers and the one error shape.
 */

/** Nothing was done and nothing is wrong with the request: it can be sent again after a while. */
export class Unavailable extends Error {
  constructor(
    message: string,
    /** When to try again; unset: the client's own backoff. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The process is closing: what is queued finishes, nothing new is taken. */
export class ShuttingDown extends Unavailable {
  constructor() {
    super('The service is shutting down; retry', 1);
  }
}

/** The event store is too far behind what was acknowledged: new records wait until it catches up. */
export class Backpressure extends Unavailable {}

/** The running totals a decision needs could not be read (the event store behind or down). */
export class TotalsUnavailable extends Unavailable {}

/** The durable log could not be written, or met other instances' writes: nothing was stored. */
export class LogUnavailable extends Unavailable {}

/** The request holds values the service cannot take: each problem names its field. */
export class InvalidInput extends Error {
  constructor(
    message: string,
    readonly details: readonly unknown[],
  ) {
    super(message);
    this.name = 'InvalidInput';
  }
}
