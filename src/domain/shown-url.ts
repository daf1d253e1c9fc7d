/**
 * A webhook URL as it is shown and stored outside its sealed column: API answers, the audit log,
 * alerts and the events that carry them. Every credential a URL can hold is replaced by `***`:
 *
 *   userinfo         https://***:***@host/path     (each of user and password, when present)
 *   query values     ?token=***&v=***              (names kept; a bare `?value` is `***`)
 *   fragment         #***
 *   a slack path     https://hooks.slack.com/***   (format slack, or a Slack host in any format)
 *
 * The rest is the URL as parsed (host lowercased, default port dropped). Masking a masked URL gives
 * it back unchanged, so every place shows one form. Domain: it imports nothing of the project, so the
 * migration that rewrites stored URLs (src/stores/migration-steps.ts) uses it too.
 */

export const MASK = '***';

/** Hosts of Slack's incoming webhooks: their path is the credential, whatever format the endpoint has. */
const SLACK_HOSTS = new Set(['hooks.slack.com', 'hooks.slack-gov.com']);

/** `a=1&b&c=` as `a=***&***&c=***`: names stay to tell parameters apart, values may be tokens. */
function maskedPairs(text: string): string {
  return text
    .split('&')
    .map((pair) => {
      if (pair === '') return pair;
      const eq = pair.indexOf('=');
      return eq === -1 ? MASK : `${pair.slice(0, eq + 1)}${MASK}`;
    })
    .join('&');
}

/**
 * The URL of an endpoint of `format` as shown. Text that does not parse as a URL is shown as `***`
 * whole: what it holds cannot be told apart.
 */
export function shownUrl(raw: string, format: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return MASK;
  }
  if (url.username) url.username = MASK;
  if (url.password) url.password = MASK;
  // Slack's token is in the path, and so are its team and channel ids: with a trailing slash, or
  // a workflow URL, the token is not the last segment, so the whole path goes.
  if ((format === 'slack' || SLACK_HOSTS.has(url.hostname.replace(/\.$/, ''))) && url.pathname !== '/') url.pathname = `/${MASK}`;
  if (url.search) url.search = maskedPairs(url.search.slice(1));
  if (url.hash) url.hash = MASK;
  return url.href;
}
