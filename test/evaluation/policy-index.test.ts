/**
 * The policy index gives the answers a check of every policy and limit would: the same policies
 * per agent in the same order, the same limits broken by a total, the same endpoint patterns
 * matched (random cases, fast-check).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { endpointMatcher, PatternIndex } from '../../src/evaluation/matchers.js';
import { toUnits } from '../../src/domain/money.js';
import { compilePolicy, type CompiledPolicy } from '../../src/evaluation/policies.js';
import { brokenCount, crossedRange, mayCross, PolicyIndex } from '../../src/evaluation/policy-index.js';
import type { Limit } from '../../src/policies/limits.js';

const AGENTS = ['a', 'b', 'c', 'd'];
const PATTERNS = ['api.x.com', 'x.com', '*.x.com', '*.com', 'https://api.x.com', 'https://api.x.com/v1/', 'https://api.x.com/v1/chat', 'http://api.x.com/', 'https://x.com'];
const ZONES = [null, 'Europe/Paris', 'America/New_York'];
const amount = fc.integer({ min: 0, max: 60 }).map((n) => (n / 4).toString());

const limitArb: fc.Arbitrary<Limit> = fc.oneof(
  fc.record({ kind: fc.constant('per_call' as const), amount }),
  fc.record({ kind: fc.constant('per_hour' as const), amount }),
  fc.record({ kind: fc.constant('daily' as const), amount }),
  fc.record({ kind: fc.constant('per_endpoint' as const), amount, endpoint: fc.constantFrom(...PATTERNS) }),
);
const policyArb = fc.record({
  agents: fc.subarray(AGENTS),
  limits: fc.array(limitArb, { minLength: 1, maxLength: 4 }),
  action: fc.constantFrom('flag' as const, 'block' as const),
  timezone: fc.constantFrom(...ZONES),
});

/** Policies as evaluation compiles them, in order. */
const compiled = (specs: { agents: string[]; limits: Limit[]; action: 'flag' | 'block'; timezone: string | null }[]) =>
  specs.map((p, i) => compilePolicy({ id: `pol_${i}`, name: `p${i}`, ...p }, i));

describe('policy index', () => {
  it('policies of an agent: team-wide and naming it, in policy order', () => {
    fc.assert(
      fc.property(fc.array(policyArb, { maxLength: 12 }), fc.constantFrom(...AGENTS, 'z'), (specs, agent) => {
        const policies = compiled(specs);
        const index = new PolicyIndex(policies);
        const expected = policies.filter((p) => p.agents === null || p.agents.has(agent));
        expect(index.policiesOf(agent).map((p) => p.id)).to.deep.equal(expected.map((p) => p.id));
        // Its sets hold exactly those policies' limits.
        const fromSets = index.setsOf(agent).flatMap((s) => s.policies.map((p) => p.id));
        expect([...fromSets].sort()).to.deep.equal(expected.map((p) => p.id).sort());
      }),
      { numRuns: 300 },
    );
  });

  it('the limits a total breaks are the prefix brokenCount gives: those of the scope with an amount below it', () => {
    fc.assert(
      fc.property(fc.array(policyArb, { maxLength: 12 }), fc.constantFrom(...AGENTS), amount, (specs, agent, observedText) => {
        const policies = compiled(specs);
        const observed = toUnits(observedText);
        const index = new PolicyIndex(policies);
        const applicable = policies.filter((p) => p.agents === null || p.agents.has(agent));
        const naive = (scope: string | null) =>
          applicable.flatMap((p: CompiledPolicy) => p.limits.filter((l) => l.scope === scope && observed > l.amount).map((l) => `${p.id}:${l.kind}:${l.endpoint ?? ''}`)).sort();
        const scopes = new Set(applicable.flatMap((p) => p.limits.map((l) => l.scope)));
        for (const scope of scopes) {
          const found = index
            .setsOf(agent)
            .flatMap((set) => {
              const list = scope === null ? set.perCall : set.windowed.get(scope);
              return list ? list.entries.slice(0, brokenCount(list, observed)) : [];
            })
            .map((e) => `${e.policy.id}:${e.limit.kind}:${e.limit.endpoint ?? ''}`)
            .sort();
          expect(found, `scope ${scope}`).to.deep.equal(naive(scope));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a scope's bounds hold every limit and threshold amount of every list of the scope, in every agent's sets", () => {
    const withThresholds = fc.record({
      agents: fc.subarray(AGENTS),
      limits: fc.array(limitArb, { minLength: 1, maxLength: 4 }),
      action: fc.constantFrom('flag' as const, 'block' as const),
      timezone: fc.constantFrom(...ZONES),
      scope: fc.constantFrom('agent' as const, 'pool' as const),
      notifyAt: fc.subarray([1, 25, 50, 80, 99]),
    });
    fc.assert(
      fc.property(fc.array(withThresholds, { maxLength: 12 }), (specs) => {
        const policies = specs.map((p, i) => compilePolicy({ id: `pol_${i}`, name: `p${i}`, ...p }, i));
        const index = new PolicyIndex(policies);
        const seen = new Map<string, bigint[]>();
        for (const agent of [...AGENTS, 'z']) {
          for (const set of index.setsOf(agent)) {
            for (const [scope, list] of set.windowed) {
              const amounts = seen.get(scope) ?? seen.set(scope, []).get(scope)!;
              amounts.push(...list.amounts, ...(list.thresholds?.amounts ?? []));
            }
          }
        }
        for (const [scope, amounts] of seen) {
          const { floor, ceiling } = index.boundsOf(scope);
          expect(amounts.every((a) => a >= floor && a <= ceiling), scope).to.equal(true);
          expect(amounts.includes(floor) && amounts.includes(ceiling), scope).to.equal(true);
        }
        // A scope no policy reads: every total is under its floor.
        expect(index.boundsOf('none').floor > toUnits('1000000000000')).to.equal(true);
      }),
      { numRuns: 300 },
    );
  });

  it('the thresholds a growing total crosses are those above it before and at most it after; mayCross is false only when there are none', () => {
    const units = fc.integer({ min: 0, max: 40 }).map(BigInt);
    fc.assert(
      fc.property(fc.array(units, { maxLength: 8 }), units, units, (amounts, x, y) => {
        const [before, after] = x <= y ? [x, y] : [y, x];
        const sorted = [...amounts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        const list = { amounts: sorted, entries: sorted.map((_, j) => ({ percent: j }) as never) };
        const [from, to] = crossedRange(list, before, after);
        const naive = sorted.flatMap((a, j) => (a > before && a <= after ? [j] : []));
        expect(Array.from({ length: to - from }, (_, j) => from + j)).to.deep.equal(naive);
        if (naive.length > 0) expect(mayCross(list, before, after)).to.equal(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('endpoint patterns matched through the index are exactly those endpointMatcher matches', () => {
    const host = fc.constantFrom('x.com', 'api.x.com', 'a.api.x.com', 'api.x.co', 'y.com', 'com', 'x.com.evil.org');
    const url = fc.tuple(fc.constantFrom('https://', 'http://', 'HTTPS://', 'ftp://', ''), host, fc.constantFrom('', '/', '/v1', '/v1/', '/v1/chat', '/V1/chat', ':8443/v1/')).map(([s, h, p]) => s + h + p);
    fc.assert(
      fc.property(fc.subarray(PATTERNS), host, url, (patterns, domain, endpoint) => {
        const index = new PatternIndex<string>();
        for (const p of patterns) index.add(p, p);
        const found: string[] = [];
        index.forEachMatch(domain, endpoint, (p) => found.push(p));
        expect(found.sort()).to.deep.equal(patterns.filter((p) => endpointMatcher(p)(domain, endpoint)).sort());
      }),
      { numRuns: 2_000 },
    );
  });
});
