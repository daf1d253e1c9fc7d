/** The claim index's parts: its files and tables by name, the in-memory map of a level-0 table, and their shapes. */
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Registry } from '../../stores/sqlite.js';
import type { RunReader } from './run-file.js';
import type { RunJobResult } from './worker.js';

export const DAY_MS = 86_400_000;
/** Keys a level-0 table takes before it is frozen: small enough to sort in a worker in a blink. */
export const LEVEL0_KEYS = 250_000;
/** Runs of one day and level merged into one of the next. */
export const FAN_IN = 4;
export const GEN_TABLE = /^ingest_claims_(\d{8})_(\d+)$/;
export const LEGACY_TABLE = /^ingest_ids_(\d{8})$/;
export const RUN_FILE = /^run-(\d+)\.db$/;

/** `YYYYMMDD` of the UTC day of `ms`. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
}

/** Where the run files of a registry live. */
export function runFolder(db: Registry): string {
  return path.join(path.dirname(db.name), 'dedup-runs');
}

/**
 * The exact keys of a level-0 table: team -> id -> print as decimal text (or null). Per team, so a
 * look-up hashes the id string as parsed from the request (V8 keeps a string's hash), instead of
 * a new joined key per id.
 */
export class KeyMap {
  private readonly teams = new Map<string, Map<string, string | null>>();
  size = 0;

  get(teamId: string, id: string): string | null | undefined {
    return this.teams.get(teamId)?.get(id);
  }

  /** Adds a key it does not hold; false when it held it. */
  add(teamId: string, id: string, fp: string | null): boolean {
    let ids = this.teams.get(teamId);
    if (!ids) this.teams.set(teamId, (ids = new Map()));
    if (ids.has(id)) return false;
    ids.set(id, fp);
    this.size++;
    return true;
  }
}

/** A level-0 table and the exact map of its keys. */
export interface Generation {
  table: string;
  day: string;
  seq: number;
  keys: KeyMap;
  frozen: boolean;
  /** A worker is writing it as a run. */
  building: boolean;
}

export interface Run {
  file: string;
  day: string;
  level: number;
  rows: number;
  reader: RunReader;
  merging: boolean;
}

/** A day table of the former B-tree index: probed without a filter until rewritten as a run. */
export interface LegacyDay {
  table: string;
  day: string;
  probe: Database.Statement;
  building: boolean;
}

/** What one worker is doing, and its callbacks. */
export interface RunWorker {
  worker?: Worker;
  job?: { id: number; done: (result: RunJobResult) => void };
}

export interface ClaimIndexOptions {
  /** Keys a level-0 table takes before it is frozen (tests make it small). */
  level0Keys?: number;
}

/** The index open on each registry connection: a second one replaces the first (tests open several). */
