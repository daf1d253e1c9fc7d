/** The in-memory sums of open holds that decisions read: windows, endpoints, release and expiry. */
import { expect } from 'chai';
import { Holds, type Hold } from '../../src/authorizations/holds.js';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let next = 0;
function hold(fields: Partial<Hold>): Hold {
  return {
    id: `auth_${next++}`,
    teamId: 'team_a',
    agentId: 'bot',
    domain: 'api.example.com',
    endpoint: 'https://api.example.com/x',
    category: 'api',
    asset: 'USDC',
    network: 'eip155:8453',
    tags: [],
    amount: 1_000_000n,
    at: T0,
    expiresAt: T0 + 5 * MINUTE,
    ...fields,
  };
}

describe('open holds', () => {
  it('sums an agent\'s holds in a window, and only the endpoints a limit matches', () => {
    const holds = new Holds();
    holds.add(hold({ amount: 2_000_000n, at: T0 + 30_000 }));
    holds.add(hold({ amount: 3_000_000n, at: T0 + 59_999, domain: 'api.other.com', endpoint: 'https://api.other.com/y' }));
    holds.add(hold({ amount: 5_000_000n, at: T0 - 1 })); // the hour before
    holds.add(hold({ amount: 7_000_000n, agentId: 'other-bot' }));
    holds.add(hold({ amount: 11_000_000n, teamId: 'team_b' }));
    const hour = { start: T0, end: T0 + HOUR };
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE, hour)).to.equal(5_000_000n);
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE, { start: T0 - HOUR, end: T0 })).to.equal(5_000_000n);
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE, null)).to.equal(10_000_000n);
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE, hour, (f) => f.domain === 'api.other.com')).to.equal(3_000_000n);
    expect(holds.heldIn('team_a', 'nobody', T0 + MINUTE, null)).to.equal(0n);
  });

  it('stops counting a hold once released, and releases it once', () => {
    const holds = new Holds();
    const a = hold({ amount: 2_000_000n });
    const b = hold({ amount: 3_000_000n });
    holds.add(a);
    holds.add(b);
    expect(holds.remove(a.id)).to.equal(true);
    expect(holds.remove(a.id)).to.equal(false);
    expect(holds.heldIn('team_a', 'bot', T0, null)).to.equal(3_000_000n);
    expect(holds.remove(b.id)).to.equal(true);
    expect(holds.heldIn('team_a', 'bot', T0, null)).to.equal(0n);
    expect(holds.size).to.equal(0);
  });

  it('stops counting each hold at its own expiry, in whatever order they were approved', () => {
    const holds = new Holds();
    const late = hold({ amount: 1_000_000n, expiresAt: T0 + 10 * MINUTE });
    const early = hold({ amount: 2_000_000n, at: T0 + 1000, expiresAt: T0 + MINUTE });
    const middle = hold({ amount: 4_000_000n, at: T0 + 2000, expiresAt: T0 + 5 * MINUTE });
    for (const h of [late, early, middle]) holds.add(h);
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE - 1, null)).to.equal(7_000_000n);
    expect(holds.heldIn('team_a', 'bot', T0 + MINUTE, null)).to.equal(5_000_000n);
    // Released before it expires: its expiry later changes nothing.
    expect(holds.remove(middle.id)).to.equal(true);
    expect(holds.heldIn('team_a', 'bot', T0 + 5 * MINUTE, null)).to.equal(1_000_000n);
    expect(holds.heldIn('team_a', 'bot', T0 + 10 * MINUTE, null)).to.equal(0n);
    expect(holds.size).to.equal(0);
    expect(holds.remove(late.id)).to.equal(false);
  });

  it('matches summing the holds one by one, over many holds with random expiries and releases', () => {
    const holds = new Holds();
    const live: Hold[] = [];
    let random = 42;
    const rand = (n: number) => ((random = (random * 1103515245 + 12345) % 2 ** 31), random % n);
    for (let step = 0; step < 3000; step++) {
      const now = T0 + step * 1000;
      if (rand(4) === 0 && live.length > 0) {
        const [gone] = live.splice(rand(live.length), 1);
        holds.remove(gone!.id);
      } else {
        const h = hold({ amount: BigInt(1 + rand(1000)), at: now, expiresAt: now + 1000 * (1 + rand(600)), domain: `d${rand(3)}`, endpoint: `e${rand(2)}` });
        holds.add(h);
        live.push(h);
      }
      const window = { start: now - (now % HOUR), end: now - (now % HOUR) + HOUR };
      const matches = (f: { domain: string }) => f.domain !== 'd1';
      const expected = live.filter((h) => h.expiresAt > now && h.at >= window.start && h.at < window.end && matches(h)).reduce((s, h) => s + h.amount, 0n);
      expect(holds.heldIn('team_a', 'bot', now, window, matches)).to.equal(expected);
    }
  });

  it('sums a pool (a set of agents, or the whole team), counts calls, and filters on category, asset and tags', () => {
    const holds = new Holds();
    holds.add(hold({ amount: 1_000_000n, agentId: 'a' }));
    holds.add(hold({ amount: 2_000_000n, agentId: 'b', category: 'llm', tags: ['research'] }));
    holds.add(hold({ amount: 4_000_000n, agentId: 'c', asset: 'EURC' }));
    holds.add(hold({ amount: 8_000_000n, agentId: 'd', teamId: 'team_b' }));
    const now = T0 + MINUTE;
    expect(holds.heldIn('team_a', null, now, null)).to.equal(7_000_000n);
    expect(holds.heldIn('team_a', new Set(['a', 'b', 'x']), now, null)).to.equal(3_000_000n);
    expect(holds.heldIn('team_a', new Set(['a', 'b', 'c']), now, null, undefined, 'calls')).to.equal(3n);
    expect(holds.heldIn('team_a', null, now, null, (f) => f.category === 'llm')).to.equal(2_000_000n);
    expect(holds.heldIn('team_a', null, now, null, (f) => f.asset === 'USDC', 'calls')).to.equal(2n);
    expect(holds.heldIn('team_a', null, now, null, (f) => f.tags.includes('research'))).to.equal(2_000_000n);
    // Released: the team's agent list forgets an agent with nothing held.
    holds.remove(holds['byId'].keys().next().value!);
    expect(holds.heldIn('team_a', null, now, null)).to.equal(6_000_000n);
  });
});
