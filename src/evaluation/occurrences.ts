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
 */
import type { Occurrence, Severity } from '../alerts/repository.js';
import type { EventRow } from '../ingest/records.js';
import type { LimitList } from './policy-index.js';
import { breachKey, breachOccurrence, type Breach } from './policies.js';
import type { Window } from './windows.js';

/** The dedup key of a team's storm alert: one open at a time. */
export const STORM_KEY = 'system\u0000alert_storm';

const MAX_SAMPLES = 10;

interface Entry {
  /** The group's row that first raised it (its `alerts_created` counts the alert if opened). */
  row: number;
  occurrence: Occurrence;
  /** Rebuilds the text from the latest occurrence (by event time), at the end. */
  latest?: () => Occurrence;
  /** For a breach: its facts, and those of a later occurrence (rebuilt into text only at the end). */
  breach?: Breach;
  latestBreach?: { breach: Breach; row: EventRow; amount: bigint; now: number };
}

/** What a team's occurrences beyond the bound add up to in this group. */
interface Storm {
  /** Occurrences recorded one by one (distinct breaches or anomalies). */
  individual: number;
  /** Occurrences counted here instead. */
  folded: number;
  firstRow: number;
  rows: Set<number>;
  agents: Set<string>;
  byKind: Record<string, number>;
  severity: Severity;
  samplePolicies: { id: string; name: string }[];
  eventIds: string[];
  firstSeen: number;
  lastSeen: number;
}

const RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

export class OccurrenceMerger {
  private readonly entries = new Map<string, Entry>();
  /** Per team, agent, limit list and window: the breaches of the list recorded one by one, a prefix of it. */
  private readonly prefixes = new Map<string, Entry[]>();
  private readonly storms = new Map<string, Storm>();
  private individual = 0;

  constructor(
    private readonly perTeam: number,
    private readonly perGroup: number,
  ) {}

  /** One occurrence of a breach or anomaly (built only if it is the first of its key). */
  add(index: number, row: EventRow, dedupKey: string, build: () => Occurrence): void {
    const key = `${row.team_id}\u0000${dedupKey}`;
    const entry = this.entries.get(key);
    if (entry) {
      this.merge(entry, row);
      if (row.event_time >= entry.occurrence.lastSeen) entry.latest = build;
      return;
    }
    if (!this.admit(row.team_id, index, row)) {
      const occurrence = build();
      this.fold(row.team_id, index, row, occurrence.kind, 1, occurrence.severity);
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
    const cursor = `${row.team_id}\u0000${row.agent_id}\u0000${list.id}\u0000${window?.start ?? ''}`;
    let recorded = this.prefixes.get(cursor);
    if (!recorded) this.prefixes.set(cursor, (recorded = []));
    // Breaches this group already records: merged (no key, no text).
    const merging = Math.min(recorded.length, broken);
    for (let j = 0; j < merging; j++) {
      const entry = recorded[j]!;
      this.merge(entry, row);
      if (row.event_time >= entry.occurrence.lastSeen) entry.latestBreach = { breach: { ...entry.breach!, observed }, row, amount, now };
    }
    let j = recorded.length;
    while (j < broken && this.admit(row.team_id, index, row)) {
      const { policy, limit } = list.entries[j]!;
      const breach: Breach = { policy, limit, observed, window, dedupKey: breachKey(row.agent_id, policy, limit, window) };
      const key = `${row.team_id}\u0000${breach.dedupKey}`;
      let entry = this.entries.get(key);
      if (entry) {
        // Not expected (a limit is in one list per agent), but never two occurrences of one key.
        this.merge(entry, row);
        this.individual--;
        this.storms.get(row.team_id)!.individual--;
      } else {
        entry = { row: index, occurrence: breachOccurrence(row.team_id, breach, row, amount, now), breach };
        this.entries.set(key, entry);
      }
      recorded.push(entry);
      j++;
    }
    if (j < broken) {
      const critical = list.criticalBefore[broken]! - list.criticalBefore[j]! > 0;
      this.fold(row.team_id, index, row, list.kind, broken - j, critical ? 'critical' : 'warning');
      const storm = this.storms.get(row.team_id)!;
      for (let k = j; k < broken && storm.samplePolicies.length < MAX_SAMPLES; k++) {
        const { policy } = list.entries[k]!;
        if (!storm.samplePolicies.some((p) => p.id === policy.id)) storm.samplePolicies.push({ id: policy.id, name: policy.name });
      }
    }
  }

  /** The occurrences to record, each with the row that raised it first; a storm alert per team that had one. */
  result(): { row: number; occurrence: Occurrence }[] {
    const out = [...this.entries.values()].map((entry) => {
      const { latestBreach: b } = entry;
      const latest = b ? breachOccurrence(entry.occurrence.teamId, b.breach, b.row, b.amount, b.now) : entry.latest?.();
      if (latest) Object.assign(entry.occurrence, { observed: latest.observed, message: latest.message, details: latest.details });
      return { row: entry.row, occurrence: entry.occurrence };
    });
    for (const [teamId, storm] of this.storms) if (storm.folded > 0) out.push({ row: storm.firstRow, occurrence: stormOccurrence(teamId, storm, this.perTeam) });
    return out;
  }

  private merge(entry: Entry, row: EventRow): void {
    const target = entry.occurrence;
    target.count += 1;
    target.firstSeen = Math.min(target.firstSeen, row.event_time);
    if (row.event_time >= target.lastSeen) target.lastSeen = row.event_time;
    if (target.eventIds.length < MAX_SAMPLES && !target.eventIds.includes(row.id)) target.eventIds = [...target.eventIds, row.id];
  }

  private stormOf(teamId: string, index: number, row: EventRow): Storm {
    let storm = this.storms.get(teamId);
    if (!storm) {
      storm = {
        individual: 0, folded: 0, firstRow: index, rows: new Set(), agents: new Set(), byKind: {}, severity: 'warning',
        samplePolicies: [], eventIds: [], firstSeen: row.event_time, lastSeen: row.event_time,
      };
      this.storms.set(teamId, storm);
    }
    return storm;
  }

  /** Whether one more distinct occurrence of the team may be recorded one by one (counted if so). */
  private admit(teamId: string, index: number, row: EventRow): boolean {
    const storm = this.stormOf(teamId, index, row);
    if (storm.individual >= this.perTeam || this.individual >= this.perGroup) return false;
    storm.individual++;
    this.individual++;
    return true;
  }

  private fold(teamId: string, index: number, row: EventRow, kind: string, count: number, severity: Severity): void {
    const storm = this.stormOf(teamId, index, row);
    if (storm.folded === 0) {
      storm.firstRow = index;
      storm.firstSeen = row.event_time;
      storm.lastSeen = row.event_time;
    }
    storm.folded += count;
    storm.rows.add(index);
    storm.agents.add(row.agent_id);
    storm.byKind[kind] = (storm.byKind[kind] ?? 0) + count;
    if (RANK[severity] > RANK[storm.severity]) storm.severity = severity;
    storm.firstSeen = Math.min(storm.firstSeen, row.event_time);
    storm.lastSeen = Math.max(storm.lastSeen, row.event_time);
    if (storm.eventIds.length < MAX_SAMPLES && !storm.eventIds.includes(row.id)) storm.eventIds.push(row.id);
  }
}

function stormOccurrence(teamId: string, storm: Storm, perTeam: number): Occurrence {
  const agents = [...storm.agents];
  const kinds = Object.entries(storm.byKind)
    .map(([kind, n]) => `${n.toLocaleString('en-US')} ${kind}`)
    .join(', ');
  const policies = storm.samplePolicies.map((p) => `"${p.name}"`).join(', ');
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
      agents: agents.length,
      individualAlerts: storm.individual,
      maxAlertsPerCommit: perTeam,
      sampleAgents: agents.slice(0, MAX_SAMPLES),
      samplePolicies: storm.samplePolicies,
    },
    message:
      `Alert storm: one commit raised more than ${perTeam.toLocaleString('en-US')} alerts for this team; ` +
      `${storm.folded.toLocaleString('en-US')} further occurrences (${kinds}) from ${storm.rows.size.toLocaleString('en-US')} records ` +
      `of ${agents.length.toLocaleString('en-US')} agents are counted here instead of an alert each` +
      (policies ? `; policies include ${policies}` : ''),
    eventIds: storm.eventIds,
    count: storm.folded,
    firstSeen: storm.firstSeen,
    lastSeen: storm.lastSeen,
  };
}
