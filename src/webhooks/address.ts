import dns from 'node:dns/promises';
import net from 'node:net';

/**
 * Addresses a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE=1: a URL given by a tenant
 * would otherwise let it probe the service's own network (SSRF): loopback, private, carrier-grade
 * NAT, link-local (the cloud metadata service at 169.254.169.254 among them), multicast and
 * reserved ranges, and their IPv6 counterparts.
 */
const BLOCKED = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['100::', 64],
] as const) BLOCKED.addSubnet(network, prefix, 'ipv6');

/** Whether an IP address is one a webhook may not reach (IPv4-mapped IPv6 is judged as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  const family = net.isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export interface UrlPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

/** Resolves a host name to its addresses (injectable for tests of DNS changes). */
export type Resolver = (host: string) => Promise<string[]>;

/**
 * DNS through c-ares with a timeout, not getaddrinfo: that one runs on libuv's small thread pool,
 * where the ingest path's disk flushes run too, and a slow name server would hold its threads.
 * c-ares does not read /etc/hosts, so `localhost` (and *.localhost, RFC 6761) are loopback here.
 */
export const systemResolver: Resolver = async (host) => {
  if (host === 'localhost' || host.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  const resolver = new dns.Resolver({ timeout: 2_000, tries: 2 });
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  if (addresses.length === 0) throw new Error(`${host} does not resolve`);
  return addresses;
};

/**
 * Why a webhook URL may not be used, or undefined when it may: https (http only when allowed), no
 * fragment, and a host whose every address is public (unless private ones are allowed). Checked at
 * creation and again before each delivery, since DNS can change between the two.
 */
export async function urlProblem(raw: string, policy: UrlPolicy, resolve: Resolver = systemResolver): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    return policy.allowHttp ? 'must be an https or http URL' : 'must be an https URL (http only with WEBHOOK_ALLOW_HTTP=1)';
  }
  if (url.hash) return 'must not have a #fragment';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      return `has a host that does not resolve (${host})`;
    }
  }
  if (addresses.length === 0) return `has a host that does not resolve (${host})`;
  if (!policy.allowPrivate) {
    const blocked = addresses.find(isPrivateAddress);
    if (blocked) return `resolves to ${blocked}, a loopback, private, link-local or reserved address (allowed only with WEBHOOK_ALLOW_PRIVATE=1)`;
  }
  return undefined;
}
