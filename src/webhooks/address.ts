import dns from 'node:dns/promises';

/** A network as the leading bytes of its addresses and its prefix length in bits. */
interface Network {
  bytes: Uint8Array;
  prefix: number;
}

/**
 * Addresses a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE=1: a URL given by a tenant
 * would otherwise let it probe the service's own network (SSRF): loopback, private, carrier-grade
 * NAT, link-local (the cloud metadata service at 169.254.169.254 among them), multicast and
 * reserved ranges, and their IPv6 counterparts. IPv6 ranges that carry an IPv4 address are not
 * listed here: the IPv4 inside is judged instead (embeddedIPv4).
 */
const BLOCKED_V4: Network[] = (
  [
    ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
    ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
    ['224.0.0.0', 4], ['240.0.0.0', 4],
  ] as const
).map(([text, prefix]) => ({ bytes: ipv4Bytes(text)!, prefix }));
const BLOCKED_V6: Network[] = (
  [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64]] as const
).map(([text, prefix]) => ({ bytes: ipv6Bytes(text)!, prefix }));

function inNetwork(address: Uint8Array, network: Network): boolean {
  const whole = network.prefix >> 3;
  for (let i = 0; i < whole; i++) if (address[i] !== network.bytes[i]) return false;
  const bits = network.prefix & 7;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return (address[whole]! & mask) === (network.bytes[whole]! & mask);
}

/** A dotted quad (four decimal parts 0-255, no leading zeros: `010` is octal to some parsers) as 4 bytes. */
function ipv4Bytes(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (part.length === 0 || part.length > 3 || (part.length > 1 && part[0] === '0')) return undefined;
    for (const c of part) if (c < '0' || c > '9') return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[i] = value;
  }
  return bytes;
}

/** The 16-bit groups of one side of `::`, a dotted quad allowed last (as two groups); undefined if malformed. */
function ipv6Groups(text: string, quadAllowed: boolean): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (quadAllowed && i === parts.length - 1 && part.includes('.')) {
      const quad = ipv4Bytes(part);
      if (!quad) return undefined;
      groups.push((quad[0]! << 8) | quad[1]!, (quad[2]! << 8) | quad[3]!);
      continue;
    }
    if (part.length === 0 || part.length > 4) return undefined;
    for (const c of part.toLowerCase()) if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return undefined;
    groups.push(parseInt(part, 16));
  }
  return groups;
}

/** An IPv6 address in any text form (`::` compression, a trailing dotted quad, a zone id, any case) as 16 bytes. */
function ipv6Bytes(text: string): Uint8Array | undefined {
  const zone = text.indexOf('%');
  const address = zone === -1 ? text : text.slice(0, zone);
  if (zone !== -1 && zone === text.length - 1) return undefined;
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const head = ipv6Groups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? ipv6Groups(halves[1]!, true) : [];
  if (!head || !tail) return undefined;
  const explicit = head.length + tail.length;
  // Without `::` all eight groups are written; with it, it stands for at least one.
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - explicit).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

/** An IP address as its bytes, 4 (IPv4) or 16 (IPv6), or undefined when the text is neither. */
export function addressBytes(text: string): Uint8Array | undefined {
  return text.includes(':') ? ipv6Bytes(text) : ipv4Bytes(text);
}

const startsWith = (bytes: Uint8Array, prefix: readonly number[]) => prefix.every((b, i) => bytes[i] === b);
const ZEROS_10 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/**
 * The IPv4 addresses an IPv6 address carries, by the ways IPv4 is embedded in IPv6: each reaches
 * (or, through a relay, is reached from) that IPv4 host, so each is judged as IPv4.
 */
function embeddedIPv4(b: Uint8Array): Uint8Array[] {
  const last32 = b.subarray(12, 16);
  // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 (deprecated; :: and ::1 among them).
  if (startsWith(b, [...ZEROS_10, 0xff, 0xff]) || startsWith(b, [...ZEROS_10, 0, 0])) return [last32];
  // IPv4-translated ::ffff:0:0:0/96 (SIIT, RFC 2765).
  if (startsWith(b, [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0])) return [last32];
  // 6to4 2002::/16: the IPv4 is bits 16-47.
  if (startsWith(b, [0x20, 0x02])) return [b.subarray(2, 6)];
  // NAT64 well-known 64:ff9b::/96 and local-use 64:ff9b:1::/48 (RFC 8215): the IPv4 is the last 32 bits.
  if (startsWith(b, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]) || startsWith(b, [0, 0x64, 0xff, 0x9b, 0, 1])) return [last32];
  // Teredo 2001::/32: the server is bits 32-63, the client the last 32 bits inverted.
  if (startsWith(b, [0x20, 0x01, 0, 0])) return [b.subarray(4, 8), last32.map((x) => x ^ 0xff)];
  return [];
}

/**
 * Whether an IP address is one a webhook may not reach. An IPv6 address that carries an IPv4
 * address (mapped, compatible, translated, 6to4, NAT64, Teredo) is refused if that IPv4 is; text
 * that is not an address is refused too.
 */
export function isPrivateAddress(address: string): boolean {
  const bytes = addressBytes(address);
  if (!bytes) return true;
  if (bytes.length === 4) return BLOCKED_V4.some((n) => inNetwork(bytes, n));
  if (BLOCKED_V6.some((n) => inNetwork(bytes, n))) return true;
  return embeddedIPv4(bytes).some((v4) => BLOCKED_V4.some((n) => inNetwork(v4, n)));
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
  if (addressBytes(host)) addresses = [host];
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
