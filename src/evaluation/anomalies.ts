import type { Occurrence } from '../domain/alerts.js';
import type { AnomalyConfig } from '../config.js';
import type { EventRow } from '../domain/record-row.js';
import { formatUnits } from '../domain/money.js';

/** An agent's recent payments (a ring of amounts and their running sum) and its recent calls per URL. */
interface AgentState {
  amounts: bigint[];
  next: number;
  sum: bigint;
  /** Recent call times per URL: `times[head..]` are the live ones (no shifting per call). */
  calls: Map<string, { times: number[]; head: number }>;
}

/**
 * Anomalies beyond what the client detects, from in-memory state per agent: spikes against the
 * agent's recent average, runaway loops (one agent calling one URL too often in a short time).
 * New payees need the registry and are checked by the evaluator. State starts empty when the
 * process starts: a spike needs half a baseline of payments seen first.
 */
export class AnomalyDetector {
  /**
   * Per team, then agent, then URL, each looked up in its own map by the string as parsed (V8 keeps
   * a string's hash): a joined key would be a new long string to hash for every record.
   */
  private readonly teams = new Map<string, Map<string, AgentState>>();
  /** Agents held over all teams: past the bound, every team's are let go. */
  private agents = 0;
  /** URLs held over all agents: past the bound, every agent's calls are let go. */
  private urls = 0;
  private readonly spikeFactor: bigint;

  constructor(private readonly config: AnomalyConfig) {
    this.spikeFactor = BigInt(config.spikeFactor);
  }

  /** Anomalies of one stored event, after which it joins the agent's history. */
  check(teamId: string, row: EventRow, amount: bigint): Occurrence[] {
    const found: Occurrence[] = [];
    let team = this.teams.get(teamId);
    if (!team) this.teams.set(teamId, (team = new Map()));
    let agent = team.get(row.agent_id);
    if (!agent) {
      if (++this.agents > 200_000) {
        this.teams.clear();
        this.teams.set(teamId, (team = new Map()));
        this.agents = 1;
        this.urls = 0;
      }
      agent = { amounts: [], next: 0, sum: 0n, calls: new Map() };
      team.set(row.agent_id, agent);
    }
    const spike = this.spike(teamId, row, amount, agent);
    if (spike) found.push(spike);
    const loop = this.loop(teamId, row, agent);
    if (loop) found.push(loop);
    return found;
  }

  private spike(teamId: string, row: EventRow, amount: bigint, b: AgentState): Occurrence | undefined {
    const n = BigInt(b.amounts.length);
    let found: Occurrence | undefined;
    // amount > factor x average  <=>  amount x n > factor x sum (exact, no division).
    if (b.amounts.length * 2 >= this.config.spikeBaseline && b.sum > 0n && amount * n > this.spikeFactor * b.sum) {
      const average = formatUnits(b.sum / n);
      const threshold = formatUnits((BigInt(this.config.spikeFactor) * b.sum) / n);
      const times = Number((amount * 100n * n) / b.sum) / 100;
      found = {
        teamId,
        dedupKey: `${row.agent_id}\u0000anomaly\u0000spike`,
        type: 'anomaly',
        kind: 'spike',
        severity: 'warning',
        agentId: row.agent_id,
        policyId: null,
        window: null,
        observed: formatUnits(amount),
        limit: threshold,
        subject: row.endpoint,
        details: { factor: times, baseline: average, baselinePayments: b.amounts.length, threshold: this.config.spikeFactor },
        message:
          `Agent ${row.agent_id} paid ${formatUnits(amount)} to ${row.endpoint}: ${times} times its average of ${average} ` +
          `over its last ${b.amounts.length} payments (alert above ${this.config.spikeFactor} times)`,
        eventIds: [row.id],
        count: 1,
        firstSeen: row.event_time,
        lastSeen: row.event_time,
      };
    }
    if (b.amounts.length < this.config.spikeBaseline) b.amounts.push(amount);
    else {
      b.sum -= b.amounts[b.next]!;
      b.amounts[b.next] = amount;
      b.next = (b.next + 1) % this.config.spikeBaseline;
    }
    b.sum += amount;
    return found;
  }

  private loop(teamId: string, row: EventRow, agent: AgentState): Occurrence | undefined {
    let recent = agent.calls.get(row.endpoint);
    if (!recent) {
      if (++this.urls > 200_000) {
        for (const team of this.teams.values()) for (const other of team.values()) other.calls.clear();
        this.urls = 1;
      }
      recent = { times: [], head: 0 };
      agent.calls.set(row.endpoint, recent);
    }
    const windowMs = this.config.loopSeconds * 1000;
    const { times } = recent;
    times.push(row.event_time);
    // Keep the calls of the last window before this one (records arrive roughly in time order),
    // and no more than one over the threshold.
    while (recent.head < times.length && times[recent.head]! <= row.event_time - windowMs) recent.head++;
    if (times.length - recent.head > this.config.loopCalls + 1) recent.head = times.length - (this.config.loopCalls + 1);
    if (recent.head > 64 && recent.head * 2 > times.length) {
      times.splice(0, recent.head);
      recent.head = 0;
    }
    const count = times.length - recent.head;
    if (count <= this.config.loopCalls) return undefined;
    return {
      teamId,
      dedupKey: `${row.agent_id}\u0000anomaly\u0000loop\u0000${row.endpoint}`,
      type: 'anomaly',
      kind: 'loop',
      severity: 'critical',
      agentId: row.agent_id,
      policyId: null,
      window: { start: row.event_time - windowMs, end: row.event_time },
      observed: String(count),
      limit: String(this.config.loopCalls),
      subject: row.endpoint,
      details: { calls: count, seconds: this.config.loopSeconds },
      message:
        `Agent ${row.agent_id} called ${row.endpoint} more than ${this.config.loopCalls} times within ` +
        `${this.config.loopSeconds} s: a runaway loop?`,
      eventIds: [row.id],
      count: 1,
      firstSeen: row.event_time,
      lastSeen: row.event_time,
    };
  }
}
