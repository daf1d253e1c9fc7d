/** A per_endpoint pattern as a test on an event's domain and URL (patterns are stored normalised). */
export function endpointMatcher(pattern: string): (domain: string, endpoint: string) => boolean {
  if (/^https?:\/\//.test(pattern)) {
    // Scheme and host compare lowercase; the rest as written.
    return (_domain, endpoint) => {
      const hostEnd = endpoint.indexOf('/', endpoint.indexOf('//') + 2);
      const head = (hostEnd === -1 ? endpoint : endpoint.slice(0, hostEnd)).toLowerCase();
      const normalised = hostEnd === -1 ? head : head + endpoint.slice(hostEnd);
      return normalised.startsWith(pattern);
    };
  }
  // `*.example.com` matches hosts below example.com, not example.com itself.
  if (pattern.startsWith('*.')) {
    const suffix = pattern.slice(1);
    return (domain) => domain.endsWith(suffix);
  }
  return (domain) => domain === pattern;
}
