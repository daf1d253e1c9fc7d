import { memoized } from './memo.js';

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
 * Category by domain rule, walking up the host's labels. Remembered per host, so a host's labels
 * are walked once, not per record.
 */
export const categoryOfDomain = memoized((domain: string): string | undefined => {
  for (let host = domain; host.includes('.'); host = host.slice(host.indexOf('.') + 1)) {
    const category = DOMAIN_CATEGORIES[host];
    if (category) return category;
  }
  return undefined;
});

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
