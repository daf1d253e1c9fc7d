/** Categories that a tag can name; an explicit category field may also be a client's own word. */
export const KNOWN_CATEGORIES = ['llm', 'api', 'data', 'search', 'compute', 'storage', 'media'] as const;

export const DEFAULT_CATEGORY = 'api';

/**
 * Category by domain: a host equal to a key or below it (a.b.openai.com matches openai.com).
 * Edit here to classify more providers.
 */
export const DOMAIN_CATEGORIES: Readonly<Record<string, string>> = {
  'openai.com': 'llm',
  'anthropic.com': 'llm',
  'generativelanguage.googleapis.com': 'llm',
  'aiplatform.googleapis.com': 'llm',
  'mistral.ai': 'llm',
  'cohere.com': 'llm',
  'cohere.ai': 'llm',
  'groq.com': 'llm',
  'openrouter.ai': 'llm',
  'together.xyz': 'llm',
  'deepseek.com': 'llm',
  'x.ai': 'llm',
  'perplexity.ai': 'llm',
  'fireworks.ai': 'llm',
  'openai.azure.com': 'llm',
  'replicate.com': 'compute',
  'modal.run': 'compute',
  'exa.ai': 'search',
  'tavily.com': 'search',
  'serpapi.com': 'search',
  'search.brave.com': 'search',
  'coingecko.com': 'data',
  'dune.com': 'data',
  'polygon.io': 'data',
  'alphavantage.co': 'data',
  'amazonaws.com': 'storage',
  'ipfs.io': 'storage',
  'pinata.cloud': 'storage',
  'elevenlabs.io': 'media',
  'stability.ai': 'media',
};

const known = new Set<string>(KNOWN_CATEGORIES);

/**
 * The rule's answer per recent host (null: no rule), so a host's labels are walked once, not per
 * record. Bounded as records.ts bounds its host names.
 */
const byHost = new Map<string, string | null>();
const BY_HOST_BOUND = 10_000;

/** Category by domain rule, walking up the host's labels. */
export function categoryOfDomain(domain: string): string | undefined {
  const known = byHost.get(domain);
  if (known !== undefined) return known ?? undefined;
  let found: string | null = null;
  for (let host = domain; host.includes('.'); host = host.slice(host.indexOf('.') + 1)) {
    const category = DOMAIN_CATEGORIES[host];
    if (category) {
      found = category;
      break;
    }
  }
  if (byHost.size >= BY_HOST_BOUND) byHost.clear();
  byHost.set(domain, found);
  return found ?? undefined;
}

/**
 * The category of a record: its explicit field, else metadata.category, else the first tag that
 * names a known category, else the domain rules, else `api`.
 */
export function categorize(explicit: string | undefined, metadata: Record<string, unknown> | undefined, tags: readonly string[], domain: string): string {
  if (explicit) return explicit.toLowerCase();
  const fromMetadata = metadata?.category;
  if (typeof fromMetadata === 'string' && /^[A-Za-z0-9_.-]{1,32}$/.test(fromMetadata)) return fromMetadata.toLowerCase();
  for (const tag of tags) {
    const lower = tag.toLowerCase();
    if (known.has(lower)) return lower;
  }
  return categoryOfDomain(domain) ?? DEFAULT_CATEGORY;
}
