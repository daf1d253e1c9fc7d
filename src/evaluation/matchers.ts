/** A per_endpoint pattern as a test on an event's domain and URL (patterns are stored normalised). */
export function endpointMatcher(pattern: string): (domain: string, endpoint: string) => boolean {
  if (/^https?:\/\//.test(pattern)) {
    // Scheme and host compare lowercase; the rest as written.
    return (_domain, endpoint) => urlForPrefix(endpoint).startsWith(pattern);
  }
  // `*.example.com` matches hosts below example.com, not example.com itself.
  if (pattern.startsWith('*.')) {
    const suffix = pattern.slice(1);
    return (domain) => domain.endsWith(suffix);
  }
  return (domain) => domain === pattern;
}

/** An event's URL as URL-prefix patterns compare it: scheme and host lowercase, the rest as written. */
export function urlForPrefix(endpoint: string): string {
  const hostEnd = endpoint.indexOf('/', endpoint.indexOf('//') + 2);
  const head = (hostEnd === -1 ? endpoint : endpoint.slice(0, hostEnd)).toLowerCase();
  return hostEnd === -1 ? head : head + endpoint.slice(hostEnd);
}

/**
 * Endpoint patterns indexed so that finding those an event matches costs a few map look-ups, not
 * one test per pattern: hosts by equality, `*.host` by each suffix of the event's domain that
 * starts at a dot, URL prefixes by each distinct pattern length. Same answers as endpointMatcher.
 */
export class PatternIndex<T> {
  private readonly hosts = new Map<string, T>();
  private readonly wildcards = new Map<string, T>();
  private readonly urls = new Map<string, T>();
  /** Distinct lengths of the URL prefixes, ascending. */
  private urlLengths: number[] = [];

  get size(): number {
    return this.hosts.size + this.wildcards.size + this.urls.size;
  }

  /** One value per pattern: a pattern added again keeps its first value. */
  add(pattern: string, value: T): void {
    if (/^https?:\/\//.test(pattern)) {
      if (this.urls.has(pattern)) return;
      this.urls.set(pattern, value);
      if (!this.urlLengths.includes(pattern.length)) this.urlLengths = [...this.urlLengths, pattern.length].sort((a, b) => a - b);
    } else if (pattern.startsWith('*.')) {
      if (!this.wildcards.has(pattern.slice(1))) this.wildcards.set(pattern.slice(1), value);
    } else if (!this.hosts.has(pattern)) {
      this.hosts.set(pattern, value);
    }
  }

  /** Calls `found` with the value of every pattern the event matches. */
  forEachMatch(domain: string, endpoint: string, found: (value: T) => void): void {
    if (this.hosts.size > 0) {
      const host = this.hosts.get(domain);
      if (host !== undefined) found(host);
    }
    if (this.wildcards.size > 0) {
      for (let dot = domain.indexOf('.'); dot !== -1; dot = domain.indexOf('.', dot + 1)) {
        const wildcard = this.wildcards.get(domain.slice(dot));
        if (wildcard !== undefined) found(wildcard);
      }
    }
    if (this.urls.size > 0) {
      const url = urlForPrefix(endpoint);
      for (const length of this.urlLengths) {
        if (length > url.length) break;
        const prefix = this.urls.get(url.slice(0, length));
        if (prefix !== undefined) found(prefix);
      }
    }
  }
}
