/**
 * Where a channel may send its key: the addresses an upstream may have. Link-local and cloud
 * metadata addresses never (a channel aimed there would read the host's credentials), nor the
 * gateway's own Redis or its own listening address; private and loopback addresses by default
 * (self-hosted models are the common case), unless CHANNEL_ALLOW_PRIVATE_ADDRESSES=false. The
 * gateway checks a channel's base_url when it is set; the model workers check every address they
 * connect to, so a name that later resolves elsewhere (DNS rebinding) is caught too.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { RedisTarget } from '@gateway/config';

export interface AddressPolicy {
  allowPrivate: boolean;
  /** host:port pairs no channel may point at: the gateway's Redis, the gateway itself. */
  forbidden: { host: string; port: number }[];
}

const never = new BlockList();
never.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, including 169.254.169.254
never.addSubnet('fe80::', 10, 'ipv6');
never.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
never.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6
never.addSubnet('0.0.0.0', 8, 'ipv4');
never.addAddress('::', 'ipv6');
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

const privateOrLoopback = new BlockList();
for (const [net, bits] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['127.0.0.0', 8], ['100.64.0.0', 10]] as const) privateOrLoopback.addSubnet(net, bits, 'ipv4');
privateOrLoopback.addSubnet('fc00::', 7, 'ipv6');
privateOrLoopback.addAddress('::1', 'ipv6');

const family = (ip: string) => (isIP(ip) === 6 ? 'ipv6' : 'ipv4');
/** An IPv4 address written as IPv6 (::ffff:a.b.c.d) is checked as the IPv4 one. */
const plain = (ip: string) => (ip.toLowerCase().startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

/** This machine: loopback, the unspecified address a server listens on, or one of its interfaces. */
function isThisMachine(host: string): boolean {
  const ip = plain(host);
  if (host === 'localhost' || ip.startsWith('127.') || ip === '::1' || ip === '0.0.0.0' || ip === '::') return true;
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address === ip));
}

/** Why `ip`:`port` may not be an upstream, or undefined when it may. */
export function addressProblem(address: string, port: number, policy: AddressPolicy): string | undefined {
  const ip = plain(address);
  if (never.check(ip, family(ip))) return `${ip} is a link-local, metadata or unspecified address`;
  let local: boolean | undefined;
  for (const own of policy.forbidden) {
    if (own.port !== port) continue;
    local ??= isThisMachine(ip);
    if (plain(own.host) === ip || (local && isThisMachine(own.host))) return `${ip}:${port} is the gateway's own Redis or listening address`;
  }
  if (!policy.allowPrivate && privateOrLoopback.check(ip, family(ip))) return `${ip} is a private or loopback address (CHANNEL_ALLOW_PRIVATE_ADDRESSES=false)`;
  return undefined;
}

/** Why a base URL may not be an upstream: its host's name, or any address it resolves to. */
export async function baseUrlProblem(baseUrl: string, policy: AddressPolicy): Promise<string | undefined> {
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (METADATA_NAMES.has(host.toLowerCase())) return `${host} is a cloud metadata service`;
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  let addresses: LookupAddress[];
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookupAll(host);
  } catch {
    return undefined; // a name that does not resolve now may later; the workers check at connect time
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, port, policy);
    if (problem) return problem;
  }
  return undefined;
}

const lookupAll = (host: string) => new Promise<LookupAddress[]>((resolve, reject) => {
  dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
});

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (undici's `connect.lookup`) that resolves as usual and then keeps only
 * addresses the policy allows; with none left the connection fails, naming why.
 */
export function policedLookup(policy: () => AddressPolicy): LookupFunction {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    if (METADATA_NAMES.has(hostname.toLowerCase())) return callback(Object.assign(new Error(`${hostname} is a cloud metadata service`), { code: 'EUPSTREAMFORBIDDEN' }), '');
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const problems: string[] = [];
      const allowed = addresses.filter(({ address }) => {
        // The port is not known here; the gateway's own addresses are checked with it when set.
        const problem = addressProblem(address, 0, policy());
        if (problem) problems.push(problem);
        return !problem;
      });
      if (allowed.length === 0) return callback(Object.assign(new Error(`upstream address refused: ${problems[0]}`), { code: 'EUPSTREAMFORBIDDEN' }), '');
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** The gateway's own Redis (its URL, or every seed of its cluster) as forbidden entries: no channel may point at it. */
export async function redisAddresses(target: RedisTarget): Promise<AddressPolicy['forbidden']> {
  if (typeof target !== 'string') return (await Promise.all(target.cluster.map((seed) => ownAddresses(seed.host, seed.port)))).flat();
  const url = new URL(target);
  return ownAddresses(url.hostname, Number(url.port) || 6379);
}

/**
 * The gateway's own `host:port` as forbidden entries, by every address its name resolves to (a
 * Redis named `redis`, as in docker-compose, is refused by its address too).
 */
export async function ownAddresses(host: string, port: number): Promise<AddressPolicy['forbidden']> {
  const bare = host.replace(/^\[|\]$/g, '');
  const entries = [{ host: bare, port }];
  if (isIP(bare)) return entries;
  try {
    for (const { address } of await lookupAll(bare)) entries.push({ host: address, port });
  } catch {
    // Unresolvable now: the name itself is still compared.
  }
  return entries;
}
