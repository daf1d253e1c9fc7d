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
import type { Window } from '../domain/windows.js';
import { toUnits } from '../domain/money.js';
import type { RecordFacts } from '../evaluation/policies.js';
import { categorize } from '../domain/categories.js';
import { caip2Network } from '../domain/networks.js';

export interface Hold extends RecordFacts {
  id: string;
  teamId: string;
  agentId: string;
  amount: bigint;
  /** When it was approved: the windows it counts in are those of this instant. */
  at: number;
  expiresAt: number;
}

const MINUTE = 60_000;

/** What an agent's live holds with the same facts (endpoint, category, asset, ...), approved in one minute, add up to. */
interface EndpointSum {
  facts: RecordFacts;
  sum: bigint;
  count: number;
  /** Its holds: a value is worked out hold by hold, each at the rate of its own approval. */
  members: Set<Hold>;
}

/** Per agent: minute of approval → facts → sum. */
type AgentSums = Map<number, Map<string, EndpointSum>>;

const factsKey = (h: RecordFacts) => `${h.domain}\u0000${h.endpoint}\u0000${h.category}\u0000${h.asset ?? ''}\u0000${h.network ?? ''}\u0000${h.tags.join('\u0000')}`;

/** What a filter reads of an authorization (asset and network undefined when not given). */
export function authorizationFacts(row: Pick<AuthorizationRow, 'domain' | 'endpoint' | 'asset' | 'network' | 'category' | 'tags'>): RecordFacts {
  const tags = row.tags ? (JSON.parse(row.tags) as string[]) : [];
  return {
    domain: row.domain,
    endpoint: row.endpoint,
    // Rows from before categories were kept: as a record to that endpoint without one is classified.
    category: row.category ?? categorize(undefined, undefined, tags, row.domain),
    asset: row.asset ?? undefined,
    network: row.network ? (caip2Network(row.network) ?? row.network) : undefined,
    tags,
  };
}

export class Holds {
  private readonly byId = new Map<string, Hold>();
  private readonly byAgent = new Map<string, AgentSums>();
  /** The agents of each team with live holds (what a whole-team pool sums). */
  private readonly agentsOf = new Map<string, Set<string>>();
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
        ...authorizationFacts(row),
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
    if (!minutes) {
      this.byAgent.set(agentKey, (minutes = new Map()));
      let agents = this.agentsOf.get(hold.teamId);
      if (!agents) this.agentsOf.set(hold.teamId, (agents = new Set()));
      agents.add(hold.agentId);
    }
    const minute = hold.at - (hold.at % MINUTE);
    let endpoints = minutes.get(minute);
    if (!endpoints) minutes.set(minute, (endpoints = new Map()));
    const endpointKey = factsKey(hold);
    const entry = endpoints.get(endpointKey);
    if (entry) {
      entry.sum += hold.amount;
      entry.count++;
      entry.members.add(hold);
    } else endpoints.set(endpointKey, { facts: hold, sum: hold.amount, count: 1, members: new Set([hold]) });
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
    const endpointKey = factsKey(hold);
    const entry = endpoints.get(endpointKey)!;
    entry.sum -= hold.amount;
    entry.members.delete(hold);
    if (--entry.count > 0) return true;
    endpoints.delete(endpointKey);
    if (endpoints.size > 0) return true;
    minutes.delete(minute);
    if (minutes.size > 0) return true;
    this.byAgent.delete(agentKey);
    const agents = this.agentsOf.get(hold.teamId)!;
    agents.delete(hold.agentId);
    if (agents.size === 0) this.agentsOf.delete(hold.teamId);
    return true;
  }

  /** Keeps a hold to a new expiry (a pending one a person approved: held from the decision); false when there was none. */
  extend(id: string, expiresAt: number): boolean {
    const hold = this.byId.get(id);
    if (!hold) return false;
    this.remove(id);
    this.add({ ...hold, expiresAt });
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
   * What live holds add up to in a window (all of them when `window` is null): the sum of their
   * amounts, or (`calls`) how many there are, or (`value`) each hold's amount as `valueOf` values it at
   * the instant it was approved, as its decision did (an asset without a rate: 0, as the decision
   * that held it could not value it either). Holds of one agent, of a set of agents (a pool), or of
   * every agent of the team (null); only those `test` accepts. Windows start and end on a whole
   * minute (hours, days in a time zone: every zone's offset is whole minutes; a `total` starts on
   * one), so a minute's sum is in or out whole.
   */
  heldIn(
    teamId: string,
    agents: string | ReadonlySet<string> | null,
    now: number,
    window: Window | null,
    test?: (facts: RecordFacts) => boolean,
    measure: 'spend' | 'value' | 'calls' = 'spend',
    valueOf?: (facts: RecordFacts, amount: bigint, at: number) => bigint | undefined,
  ): bigint {
    this.expire(now);
    if (window && (window.start % MINUTE !== 0 || window.end % MINUTE !== 0)) {
      throw new Error(`window ${window.start}..${window.end} does not start and end on a whole minute`);
    }
    const ofAgent = (agentId: string) => {
      const minutes = this.byAgent.get(`${teamId}\u0000${agentId}`);
      if (!minutes) return 0n;
      let sum = 0n;
      for (const [minute, endpoints] of minutes) {
        if (window && (minute < window.start || minute >= window.end)) continue;
        for (const entry of endpoints.values()) {
          if (test && !test(entry.facts)) continue;
          if (measure !== 'value') sum += measure === 'calls' ? BigInt(entry.count) : entry.sum;
          else if (valueOf) for (const hold of entry.members) sum += valueOf(hold, hold.amount, hold.at) ?? 0n;
        }
      }
      return sum;
    };
    if (typeof agents === 'string') return ofAgent(agents);
    const holding = this.agentsOf.get(teamId);
    if (!holding) return 0n;
    let sum = 0n;
    // The smaller of the pool and the agents holding.
    if (agents === null || agents.size > holding.size) {
      for (const agentId of holding) if (agents === null || agents.has(agentId)) sum += ofAgent(agentId);
    } else for (const agentId of agents) if (holding.has(agentId)) sum += ofAgent(agentId);
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
