/**
 * Open holds in memory: what approved authorizations still hold, per agent, for the decisions.
 * A hold counts in the windows of the moment it was approved (the payment follows at once) and
 * stops counting when it is captured, voided or past its expiry, whichever comes first. The
 * registry is the record; this is rebuilt from it at start-up, so holds survive a restart.
 */
import type { Registry } from '../stores/sqlite.js';
import type { Window } from '../evaluation/windows.js';
import { toUnits } from '../evaluation/money.js';
import { liveHolds } from './repository.js';

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

export class Holds {
  private readonly byAgent = new Map<string, Hold[]>();
  private readonly byId = new Map<string, Hold>();

  static load(db: Registry, now = Date.now()): Holds {
    const holds = new Holds();
    for (const row of liveHolds(db, now)) {
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
    const key = `${hold.teamId}\u0000${hold.agentId}`;
    const list = this.byAgent.get(key);
    if (list) list.push(hold);
    else this.byAgent.set(key, [hold]);
  }

  /** Releases a hold (captured or voided); false when there was none. */
  remove(id: string): boolean {
    const hold = this.byId.get(id);
    if (!hold) return false;
    this.byId.delete(id);
    const key = `${hold.teamId}\u0000${hold.agentId}`;
    const list = this.byAgent.get(key)!.filter((h) => h.id !== id);
    if (list.length) this.byAgent.set(key, list);
    else this.byAgent.delete(key);
    return true;
  }

  /**
   * What the agent's live holds add up to in a window (all of them when `window` is null), counting
   * only those to endpoints `matches` accepts. Expired holds are dropped on the way.
   */
  heldIn(teamId: string, agentId: string, now: number, window: Window | null, matches?: (domain: string, endpoint: string) => boolean): bigint {
    const key = `${teamId}\u0000${agentId}`;
    const list = this.byAgent.get(key);
    if (!list) return 0n;
    let sum = 0n;
    let expired = false;
    for (const hold of list) {
      if (hold.expiresAt <= now) {
        expired = true;
        continue;
      }
      if (window && (hold.at < window.start || hold.at >= window.end)) continue;
      if (matches && !matches(hold.domain, hold.endpoint)) continue;
      sum += hold.amount;
    }
    if (expired) {
      const live = list.filter((h) => h.expiresAt > now);
      for (const h of list) if (h.expiresAt <= now) this.byId.delete(h.id);
      if (live.length) this.byAgent.set(key, live);
      else this.byAgent.delete(key);
    }
    return sum;
  }
}
