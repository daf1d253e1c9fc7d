/**
 * Open holds in memory: what approved authorizations still hold, per agent, for the decisions.
 * A hold counts in the windows of the moment it was approved (the payment follows at once) and
 * stops counting when it is captured, voided or past its expiry, whichever comes first. The
 * registry is the record; this is rebuilt from it at start-up, so holds survive a restart.
 *
 * A decision asks what an agent holds in each window of its limits, and a busy agent may have
 * thousands of holds open: so holds are summed as they come and go, per agent, per minute of
 * approval and per endpoint, and a question sums at most an hour's minutes (a hold lives at most
 * an hour), never the holds one by one.
 */
import type { AuthorizationRow } from './repository.js';
import type { Window } from '../evaluation/windows.js';
import { toUnits } from '../evaluation/money.js';

export interface Hold {
  id: string;
  teamId: string;
  agentId: string;
  domain: string;
  endpoint: string;
  amount: bigint;
  /** When it was approved: the windows it counts in are those of this instant. */
  at: number;
  expiresAt: number;
}

const MINUTE = 60_000;

/** What an agent's live holds to one endpoint, approved in one minute, add up to. */
interface EndpointSum {
  domain: string;
  endpoint: string;
  sum: bigint;
  count: number;
}

/** Per agent: minute of approval → endpoint → sum. */
type AgentSums = Map<number, Map<string, EndpointSum>>;

export class Holds {
  private readonly byId = new Map<string, Hold>();
  private readonly byAgent = new Map<string, AgentSums>();
  /** Every live hold, soonest expiry first (a removed one is skipped when it comes up). */
  private readonly expiries = new ExpiryHeap();

  /** The holds of these rows (live holds, read from the registry: liveHolds). */
  static of(rows: readonly AuthorizationRow[]): Holds {
    const holds = new Holds();
    for (const row of rows) {
      holds.add({
        id: row.id,
        teamId: row.team_id,
        agentId: row.agent_id,
        domain: row.domain,
        endpoint: row.endpoint,
        amount: toUnits(row.amount),
        at: row.created_at,
        expiresAt: row.expires_at,
      });
    }
    return holds;
  }

  get size(): number {
    return this.byId.size;
  }

  add(hold: Hold): void {
    this.byId.set(hold.id, hold);
    this.expiries.push(hold);
    const agentKey = `${hold.teamId}\u0000${hold.agentId}`;
    let minutes = this.byAgent.get(agentKey);
    if (!minutes) this.byAgent.set(agentKey, (minutes = new Map()));
    const minute = hold.at - (hold.at % MINUTE);
    let endpoints = minutes.get(minute);
    if (!endpoints) minutes.set(minute, (endpoints = new Map()));
    const endpointKey = `${hold.domain}\u0000${hold.endpoint}`;
    const entry = endpoints.get(endpointKey);
    if (entry) {
      entry.sum += hold.amount;
      entry.count++;
    } else endpoints.set(endpointKey, { domain: hold.domain, endpoint: hold.endpoint, sum: hold.amount, count: 1 });
  }

  /** Releases a hold (captured or voided); false when there was none. */
  remove(id: string): boolean {
    const hold = this.byId.get(id);
    if (!hold) return false;
    this.byId.delete(id);
    const agentKey = `${hold.teamId}\u0000${hold.agentId}`;
    const minutes = this.byAgent.get(agentKey)!;
    const minute = hold.at - (hold.at % MINUTE);
    const endpoints = minutes.get(minute)!;
    const endpointKey = `${hold.domain}\u0000${hold.endpoint}`;
    const entry = endpoints.get(endpointKey)!;
    entry.sum -= hold.amount;
    if (--entry.count > 0) return true;
    endpoints.delete(endpointKey);
    if (endpoints.size > 0) return true;
    minutes.delete(minute);
    if (minutes.size === 0) this.byAgent.delete(agentKey);
    return true;
  }

  /** Drops every hold whose expiry has come. */
  private expire(now: number): void {
    for (let hold = this.expiries.peek(); hold && hold.expiresAt <= now; hold = this.expiries.peek()) {
      this.expiries.pop();
      if (this.byId.get(hold.id) === hold) this.remove(hold.id);
    }
  }

  /**
   * What the agent's live holds add up to in a window (all of them when `window` is null), counting
   * only those to endpoints `matches` accepts. Windows start and end on a whole minute (hours, and
   * days in a time zone: every zone's offset is whole minutes), so a minute's sum is in or out whole.
   */
  heldIn(teamId: string, agentId: string, now: number, window: Window | null, matches?: (domain: string, endpoint: string) => boolean): bigint {
    this.expire(now);
    const minutes = this.byAgent.get(`${teamId}\u0000${agentId}`);
    if (!minutes) return 0n;
    if (window && (window.start % MINUTE !== 0 || window.end % MINUTE !== 0)) {
      throw new Error(`window ${window.start}..${window.end} does not start and end on a whole minute`);
    }
    let sum = 0n;
    for (const [minute, endpoints] of minutes) {
      if (window && (minute < window.start || minute >= window.end)) continue;
      for (const entry of endpoints.values()) if (!matches || matches(entry.domain, entry.endpoint)) sum += entry.sum;
    }
    return sum;
  }
}

/** A binary min-heap of holds by expiry. */
class ExpiryHeap {
  private readonly items: Hold[] = [];

  peek(): Hold | undefined {
    return this.items[0];
  }

  push(hold: Hold): void {
    const items = this.items;
    items.push(hold);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.expiresAt <= hold.expiresAt) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = hold;
  }

  pop(): Hold | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || !last) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]!.expiresAt < items[left]!.expiresAt ? right : left;
      if (items[child]!.expiresAt >= last.expiresAt) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
