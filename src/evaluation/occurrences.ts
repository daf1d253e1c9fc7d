/**
 * What one group commit raises, merged by breach and bounded: a storm of breaches (thousands of
 * policies broken by every record of a batch) becomes a bounded number of alert writes, with
 * counts, and nothing is dropped without being counted.
 *
 * Occurrences of one breach (agent, policy, limit, window) or one anomaly in a group merge into
 * one, as an alert records them. Per team, at most `perTeam` distinct ones are recorded one by one
 * (each opens its alert or updates its open one), and at most `perGroup` over all teams; every
 * further occurrence of that team is counted into the team's one `alert_storm` alert (type
 * `system`): its count grows by the number of such occurrences, and its details say how many of
 * each kind, from how many records and agents, with sample policies, agents and records. Breaches
 * beyond the bound are counted from a limit list's sorted amounts (a range of it), never listed
 * one by one. Which breaches are recorded one by one is the same from group to group (records in
 * order, each list by amount), so a storm that goes on updates the same alerts, never opens more.
 * The alerts of a group's declined authorizations are bounded the same way, with a count of their own.
 */
import type { Occurrence, Severity } from '../domain/alerts.js';
import type { EventRow } from '../domain/record-row.js';
import type { LimitList } from './policy-index.js';
import { breachKey, breachOccurrence, type Breach } from './breaches.js';
import type { Window } from '../domain/windows.js';

/** The dedup key of a team's storm alert: one open at a time. */
export const STORM_KEY = 'system\u0000alert_storm';

/** Distinct alerts all teams of one group may record one by one: a multiple of the bound per team. */
export const GROUP_ALERTS_PER_TEAM_BOUND = 10;

const MAX_SAMPLES = 10;

interface Entry {
  /** The group's row that first raised it (its `alerts_created` counts the alert if opened). */
  row: number;
  occurrence: Occurrence;
  /** Rebuilds the text from the latest occurrence (by event time), at the end. */
  latest?: () => Occurrence;
  /**
   * For a breach: its facts, and those of its latest occurrence in the group (the first until
   * another comes), built into text once, at the end: a breach met by every record of a group
   * (a pool over its limit) costs a comparison per record, not a message.
   */
  breach?: Breach;
  latestBreach?: LatestBreach;
  /** A windowed breach: the cursors whose later records it counts too, each from its `from`th (merged at the end). */
  pending?: { cursor: WindowCursor; from: number }[];
}

/** The latest occurrence of a breach: its facts, and its record's place in the group (later: larger). */
interface LatestBreach {
  observed: bigint;
  row: EventRow;
  amount: bigint;
  now: number;
  index: number;
}

/**
 * The breaches of one windowed limit list for one subject and window, in this group. The window's
 * total only grows from record to record, so a record that breaks the list breaks at least every
 * limit recorded before it: it is merged into all of them. Rather than into each (a pool over its
 * limits would cost every record a merge per limit), its record is kept once here, and merged into
 * the entries in result(): a record costs the same whatever the number of limits it breaks.
 */
interface WindowCursor {
  entries: Entry[];
  /** Records that broke the list once entries were recorded, in group order, with their indexes. */
  rows: EventRow[];
  indexes: number[];
  latest?: LatestBreach;
}

/** What a team's occurrences beyond the bound add up to in this group. */
interface Storm {
  /** Occurrences recorded one by one (distinct breaches or anomalies). */
  individual: number;
  /** Occurrences counted here instead. */
  folded: number;
  firstRow: number;
  /** Records (by index in the group) and authorizations (by index among the group's) with folded occurrences. */
  rows: Set<number>;
  authorizations: Set<number>;
  agents: Set<string>;
  byKind: Record<string, number>;
  severity: Severity;
  samplePolicies: { id: string; name: string }[];
  eventIds: string[];
  firstSeen: number;
  lastSeen: number;
}

const RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

/**
 * The bound of one group's alerts: how many each team (and all together) record one by one, and
 * what each team's occurrences beyond it add up to. Used by the merger of a group's records and,
 * separately, by the group's authorization decisions (their declines raise alerts too).
 */
export class Storms {
  private readonly storms = new Map<string, Storm>();
  private individual = 0;

  constructor(
    readonly perTeam: number,
    private readonly perGroup: number,
  ) {}

  /** Whether one more distinct occurrence of the team may be recorded one by one (counted if so). */
  admit(teamId: string, index: number, row: EventRow): boolean {
    const storm = this.stormOf(teamId, index, row);
    if (storm.individual >= this.perTeam || this.individual >= this.perGroup) return false;
    storm.individual++;
    this.individual++;
    return true;
  }

  /** How many more distinct occurrences of the team may be recorded one by one now. */
  room(teamId: string): number {
    const used = this.storms.get(teamId)?.individual ?? 0;
    return Math.max(0, Math.min(this.perTeam - used, this.perGroup - this.individual));
  }

  /** Takes back an admission that recorded nothing new. */
  unadmit(teamId: string): void {
    this.individual--;
    this.storms.get(teamId)!.individual--;
  }

  /**
   * `count` occurrences of `kind` raised by `row` (a record, or an authorization as the event it
   * would be), counted into the team's storm alert.
   */
  fold(teamId: string, index: number, row: EventRow, kind: string, count: number, severity: Severity, from: 'record' | 'authorization' = 'record'): void {
    const storm = this.stormOf(teamId, index, row);
    if (storm.folded === 0) {
      storm.firstRow = index;
      storm.firstSeen = row.event_time;
      storm.lastSeen = row.event_time;
    }
    storm.folded += count;
    (from === 'record' ? storm.rows : storm.authorizations).add(index);
    storm.agents.add(row.agent_id);
    storm.byKind[kind] = (storm.byKind[kind] ?? 0) + count;
    if (RANK[severity] > RANK[storm.severity]) storm.severity = severity;
    storm.firstSeen = Math.min(storm.firstSeen, row.event_time);
    storm.lastSeen = Math.max(storm.lastSeen, row.event_time);
    // An authorization is no stored event: its id is not a sample event id.
    if (from === 'record' && storm.eventIds.length < MAX_SAMPLES && !storm.eventIds.includes(row.id)) storm.eventIds.push(row.id);
  }

  /** Names policies of folded breaches while the sample has room (stops at the first MAX_SAMPLES distinct). */
  samplePolicies(teamId: string, policies: Iterable<{ id: string; name: string }>): void {
    const storm = this.storms.get(teamId)!;
    for (const policy of policies) {
      if (storm.samplePolicies.length >= MAX_SAMPLES) return;
      if (!storm.samplePolicies.some((p) => p.id === policy.id)) storm.samplePolicies.push({ id: policy.id, name: policy.name });
    }
  }

  /** Names the policies of entries[from, to) of a list while the sample has room (never walks past it). */
  samplePoliciesOf(teamId: string, list: LimitList, from: number, to: number): void {
    const storm = this.storms.get(teamId)!;
    for (let k = from; k < to && storm.samplePolicies.length < MAX_SAMPLES; k++) this.samplePolicies(teamId, [list.entries[k]!.policy]);
  }

  /** A storm occurrence per team that had occurrences beyond the bound, with the row that raised the first. */
  occurrences(): { row: number; occurrence: Occurrence }[] {
    const out: { row: number; occurrence: Occurrence }[] = [];
    for (const [teamId, storm] of this.storms) if (storm.folded > 0) out.push({ row: storm.firstRow, occurrence: stormOccurrence(teamId, storm, this.perTeam) });
    return out;
  }

  private stormOf(teamId: string, index: number, row: EventRow): Storm {
    let storm = this.storms.get(teamId);
    if (!storm) {
      storm = {
        individual: 0, folded: 0, firstRow: index, rows: new Set(), authorizations: new Set(), agents: new Set(), byKind: {}, severity: 'warning',
        samplePolicies: [], eventIds: [], firstSeen: row.event_time, lastSeen: row.event_time,
      };
      this.storms.set(teamId, storm);
    }
    return storm;
  }
}

export class OccurrenceMerger {
  private readonly entries = new Map<string, Entry>();
  /**
   * Per limit list (a list is one team's), window start (-1: per_call) and subject (agent or pool):
   * the breaches of the list recorded one by one, a prefix of it. Maps keyed by the list object and
   * a number, so a record breaking limits builds no key string.
   */
  private readonly prefixes = new Map<LimitList, Map<number, Map<string, Entry[]>>>();
  /** Windowed lists: per list, window start and subject, as prefixes is for per_call lists. */
  private readonly cursors = new Map<LimitList, Map<number, Map<string, WindowCursor>>>();
  /** Per windowed list, the cursor it used last: a list is nearly always met again in the same window for the same subject (a pool's, an agent's own). */
  private readonly lastCursor = new Map<LimitList, { start: number; subject: string; cursor: WindowCursor }>();
  private readonly storms: Storms;

  constructor(perTeam: number, perGroup: number) {
    this.storms = new Storms(perTeam, perGroup);
  }

  /** One occurrence of a breach or anomaly (built only if it is the first of its key). */
  add(index: number, row: EventRow, dedupKey: string, build: () => Occurrence): void {
    const key = `${row.team_id}\u0000${dedupKey}`;
    const entry = this.entries.get(key);
    if (entry) {
      this.merge(entry, row);
      if (row.event_time >= entry.occurrence.lastSeen) entry.latest = build;
      return;
    }
    if (!this.storms.admit(row.team_id, index, row)) {
      const occurrence = build();
      this.storms.fold(row.team_id, index, row, occurrence.kind, 1, occurrence.severity);
      return;
    }
    this.entries.set(key, { row: index, occurrence: { ...build() } });
  }

  /**
   * The breaches of one record in one limit list: entries[0, broken) of `list`, with the record's
   * window (null for per_call) and the observed amount (the payment, or the window's total).
   */
  addBreaches(index: number, row: EventRow, list: LimitList, broken: number, window: Window | null, observed: bigint, amount: bigint, now: number): void {
    if (broken === 0) return;
    if (window !== null) {
      this.addWindowBreaches(index, row, list, broken, window, observed, amount, now);
      return;
    }
    let byWindow = this.prefixes.get(list);
    if (!byWindow) this.prefixes.set(list, (byWindow = new Map()));
    let bySubject = byWindow.get(-1);
    if (!bySubject) byWindow.set(-1, (bySubject = new Map()));
    let recorded = bySubject.get(row.agent_id);
    if (!recorded) bySubject.set(row.agent_id, (recorded = []));
    // Breaches this group already records: merged (no key, no text); the latest is the payment seen
    // last by event time.
    const merging = Math.min(recorded.length, broken);
    for (let j = 0; j < merging; j++) {
      const entry = recorded[j]!;
      this.merge(entry, row);
      if (row.event_time >= entry.occurrence.lastSeen) latestOf(entry, observed, row, amount, now, index);
    }
    this.recordNew(index, row, list, recorded, broken, null, observed, amount, now);
  }

  /**
   * A record's breaches of entries[0, broken) of a list but those of policies `skip` passes over,
   * each by its key, keeping no prefix: for the rare record a person approved (see
   * EventRow.approved_by_person), whose approve policies it does not break. Later records of the
   * group find these entries by key, as a breach met through two lists.
   */
  addBreachesExcept(index: number, row: EventRow, list: LimitList, broken: number, window: Window | null, observed: bigint, amount: bigint, now: number, skip: (policy: Breach['policy']) => boolean): void {
    for (let j = 0; j < broken; j++) {
      const { policy, limit } = list.entries[j]!;
      if (skip(policy)) continue;
      const breach: Breach = { policy, limit, observed, window, dedupKey: breachKey(row.agent_id, policy, limit, window) };
      const key = `${row.team_id}\u0000${breach.dedupKey}`;
      const entry = this.entries.get(key);
      if (entry) {
        this.merge(entry, row);
        if (entry.latestBreach && (window !== null || row.event_time >= entry.occurrence.lastSeen)) latestOf(entry, observed, row, amount, now, index);
        continue;
      }
      if (!this.storms.admit(row.team_id, index, row)) {
        this.storms.fold(row.team_id, index, row, list.kind, 1, policy.severity);
        continue;
      }
      this.entries.set(key, { row: index, occurrence: breachOccurrence(row.team_id, breach, row, amount, now, false), breach, latestBreach: { observed, row, amount, now, index } });
    }
  }

  /** A windowed list's breaches (see WindowCursor): the record is kept once for those recorded, and opens the rest. */
  private addWindowBreaches(index: number, row: EventRow, list: LimitList, broken: number, window: Window, observed: bigint, amount: bigint, now: number): void {
    // A windowed list is one scope: a pool's (its members, subject the pool's key) or agents' own.
    const first = list.entries[0]!.policy;
    const subject = first.poolKey !== null ? first.poolKey : row.agent_id;
    const last = this.lastCursor.get(list);
    let cursor: WindowCursor;
    if (last !== undefined && last.start === window.start && last.subject === subject) cursor = last.cursor;
    else {
      let byWindow = this.cursors.get(list);
      if (!byWindow) this.cursors.set(list, (byWindow = new Map()));
      let bySubject = byWindow.get(window.start);
      if (!bySubject) byWindow.set(window.start, (bySubject = new Map()));
      let found = bySubject.get(subject);
      if (!found) bySubject.set(subject, (found = { entries: [], rows: [], indexes: [] }));
      cursor = found;
      if (last !== undefined) Object.assign(last, { start: window.start, subject, cursor });
      else this.lastCursor.set(list, { start: window.start, subject, cursor });
    }
    if (cursor.entries.length > 0) {
      cursor.rows.push(row);
      cursor.indexes.push(index);
      const latest = cursor.latest;
      // Rewritten in place: no allocation per record.
      if (latest) {
        latest.observed = observed;
        latest.row = row;
        latest.amount = amount;
        latest.now = now;
        latest.index = index;
      } else cursor.latest = { observed, row, amount, now, index };
    }
    this.recordNew(index, row, list, cursor.entries, broken, window, observed, amount, now, cursor);
  }

  /** Records entries[recorded.length, broken) of the list, one by one while the storm bound admits them; the rest fold into the storm. */
  private recordNew(
    index: number,
    row: EventRow,
    list: LimitList,
    recorded: Entry[],
    broken: number,
    window: Window | null,
    observed: bigint,
    amount: bigint,
    now: number,
    cursor?: WindowCursor,
  ): void {
    let j = recorded.length;
    while (j < broken && this.storms.admit(row.team_id, index, row)) {
      const { policy, limit } = list.entries[j]!;
      const breach: Breach = { policy, limit, observed, window, dedupKey: breachKey(row.agent_id, policy, limit, window) };
      const key = `${row.team_id}\u0000${breach.dedupKey}`;
      let entry = this.entries.get(key);
      if (entry) {
        // One breach met through two lists (a pool's limit, in the sets of two of its agents: one
        // alert per pool): never two occurrences of one key.
        this.merge(entry, row);
        if (window !== null || row.event_time >= entry.occurrence.lastSeen) latestOf(entry, observed, row, amount, now, index);
        this.storms.unadmit(row.team_id);
      } else {
        entry = { row: index, occurrence: breachOccurrence(row.team_id, breach, row, amount, now, false), breach, latestBreach: { observed, row, amount, now, index } };
        this.entries.set(key, entry);
      }
      // The cursor's later records count in it too.
      if (cursor) (entry.pending ??= []).push({ cursor, from: cursor.rows.length });
      recorded.push(entry);
      j++;
    }
    if (j < broken) {
      const critical = list.criticalBefore[broken]! - list.criticalBefore[j]! > 0;
      this.storms.fold(row.team_id, index, row, list.kind, broken - j, critical ? 'critical' : 'warning');
      this.storms.samplePoliciesOf(row.team_id, list, j, broken);
    }
  }

  /** Merges into a windowed breach the records its cursors kept after it was recorded (in group order, as merge would have). */
  private settle(entry: Entry): void {
    const target = entry.occurrence;
    const ranges = entry.pending!.filter(({ cursor, from }) => cursor.rows.length > from);
    for (const { cursor, from } of ranges) {
      target.count += cursor.rows.length - from;
      for (let k = from; k < cursor.rows.length; k++) {
        const t = cursor.rows[k]!.event_time;
        if (t < target.firstSeen) target.firstSeen = t;
        if (t > target.lastSeen) target.lastSeen = t;
      }
      const latest = cursor.latest!;
      if (latest.index > entry.latestBreach!.index) entry.latestBreach = latest;
    }
    if (target.eventIds.length >= MAX_SAMPLES) return;
    // The samples: the first ids in group order across the cursors, as merging one by one keeps them.
    const next = ranges.map((r) => r.from);
    while (target.eventIds.length < MAX_SAMPLES) {
      let pick = -1;
      ranges.forEach(({ cursor }, r) => {
        if (next[r]! < cursor.rows.length && (pick === -1 || cursor.indexes[next[r]!]! < ranges[pick]!.cursor.indexes[next[pick]!]!)) pick = r;
      });
      if (pick === -1) return;
      const id = ranges[pick]!.cursor.rows[next[pick]!]!.id;
      next[pick]!++;
      if (!target.eventIds.includes(id)) target.eventIds = [...target.eventIds, id];
    }
  }

  /** The occurrences to record, each with the row that raised it first; a storm alert per team that had one. */
  result(): { row: number; occurrence: Occurrence }[] {
    const out = [...this.entries.values()].map((entry) => {
      if (entry.pending) this.settle(entry);
      const { latestBreach: b } = entry;
      const latest = b ? breachOccurrence(entry.occurrence.teamId, { ...entry.breach!, observed: b.observed }, b.row, b.amount, b.now) : entry.latest?.();
      if (latest) Object.assign(entry.occurrence, { observed: latest.observed, message: latest.message, details: latest.details });
      return { row: entry.row, occurrence: entry.occurrence };
    });
    out.push(...this.storms.occurrences());
    return out;
  }

  private merge(entry: Entry, row: EventRow): void {
    const target = entry.occurrence;
    target.count += 1;
    target.firstSeen = Math.min(target.firstSeen, row.event_time);
    if (row.event_time >= target.lastSeen) target.lastSeen = row.event_time;
    if (target.eventIds.length < MAX_SAMPLES && !target.eventIds.includes(row.id)) target.eventIds = [...target.eventIds, row.id];
  }
}

/** Makes this occurrence the latest of a breach's entry (rewritten in place: no allocation per record). */
function latestOf(entry: Entry, observed: bigint, row: EventRow, amount: bigint, now: number, index: number): void {
  const latest = entry.latestBreach!;
  latest.observed = observed;
  latest.row = row;
  latest.amount = amount;
  latest.now = now;
  latest.index = index;
}

function stormOccurrence(teamId: string, storm: Storm, perTeam: number): Occurrence {
  const agents = [...storm.agents];
  const kinds = Object.entries(storm.byKind)
    .map(([kind, n]) => `${n.toLocaleString('en-US')} ${kind}`)
    .join(', ');
  const policies = storm.samplePolicies.map((p) => `"${p.name}"`).join(', ');
  const sources = [
    ...(storm.rows.size > 0 ? [`${storm.rows.size.toLocaleString('en-US')} records`] : []),
    ...(storm.authorizations.size > 0 ? [`${storm.authorizations.size.toLocaleString('en-US')} declined authorizations`] : []),
  ];
  return {
    teamId,
    dedupKey: STORM_KEY,
    type: 'system',
    kind: 'alert_storm',
    severity: storm.severity,
    agentId: '',
    policyId: null,
    window: null,
    observed: null,
    limit: null,
    subject: null,
    details: {
      // This commit's figures; the alert's count adds every commit's `occurrences`.
      occurrences: storm.folded,
      byKind: storm.byKind,
      records: storm.rows.size,
      ...(storm.authorizations.size > 0 ? { declinedAuthorizations: storm.authorizations.size } : {}),
      agents: agents.length,
      individualAlerts: storm.individual,
      maxAlertsPerCommit: perTeam,
      sampleAgents: agents.slice(0, MAX_SAMPLES),
      samplePolicies: storm.samplePolicies,
    },
    message:
      `Alert storm: past the bound of ${perTeam.toLocaleString('en-US')} alerts per team in one commit, ` +
      `${storm.folded.toLocaleString('en-US')} further occurrences (${kinds}) from ${sources.join(' and ')} ` +
      `of ${agents.length.toLocaleString('en-US')} agents are counted here instead of an alert each` +
      (policies ? `; policies include ${policies}` : ''),
    eventIds: storm.eventIds,
    count: storm.folded,
    firstSeen: storm.firstSeen,
    lastSeen: storm.lastSeen,
  };
}
