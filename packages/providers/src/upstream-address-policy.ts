/**
 * Where a channel may send its key: the addresses an upstream may have. Link-local and cloud
 * metadata addresses never (a channel aimed there would read the host's credentials), nor the
 * gateway's own Redis or its own listening address; private and loopback addresses by default
 * (self-hosted models are the common case), unless CHANNEL_ALLOW_PRIVATE_ADDRESSES=false. The
 * gateway checks a channel's base_url when it is set; the model workers check every address they
 * connect to, with the port, so a name that later resolves elsewhere (DNS rebinding) is caught
 * too. Addresses and names are compared in their canonical forms (address-forms.ts), so no
 * other spelling of an address (`[::ffff:7f00:1]`, `localhost.`, `2130706433`) gets past.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { RedisTarget } from '@gateway/config';
import { canonicalAddress, canonicalHost, isLoopbackName } from './address-forms.ts';

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

/** This machine: loopback, the unspecified address a server listens on, or one of its interfaces. */
function isThisMachine(host: string): boolean {
  const ip = canonicalHost(host);
  if (isLoopbackName(ip) || ip.startsWith('127.') || ip === '::1' || ip.startsWith('0.') || ip === '::') return true;
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => canonicalAddress(i.address) === ip));
}

/** Why `address`:`port` may not be an upstream, or undefined when it may. `address` in any spelling. */
export function addressProblem(address: string, port: number, policy: AddressPolicy): string | undefined {
  const ip = canonicalHost(address);
  if (!isIP(ip)) return isLoopbackName(ip) ? addressProblem('127.0.0.1', port, policy) : undefined;
  if (never.check(ip, family(ip))) return `${ip} is a link-local, metadata or unspecified address`;
  let local: boolean | undefined;
  for (const own of policy.forbidden) {
    if (own.port !== port) continue;
    local ??= isThisMachine(ip);
    if (canonicalHost(own.host) === ip || (local && isThisMachine(own.host))) return `${ip}:${port} is the gateway's own Redis or listening address`;
  }
  if (!policy.allowPrivate && privateOrLoopback.check(ip, family(ip))) return `${ip} is a private or loopback address (CHANNEL_ALLOW_PRIVATE_ADDRESSES=false)`;
  return undefined;
}

/** The port a URL connects to. */
export const portOf = (url: URL) => Number(url.port) || (url.protocol === 'https:' ? 443 : 80);

/** Why a base URL may not be an upstream: its host's name, or any address it resolves to. */
export async function baseUrlProblem(baseUrl: string, policy: AddressPolicy): Promise<string | undefined> {
  const url = new URL(baseUrl);
  const host = canonicalHost(url.hostname);
  if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata service`;
  const port = portOf(url);
  // An address, or a loopback name, is judged as written; DNS is never asked about `localhost.`.
  if (isIP(host) || isLoopbackName(host)) return addressProblem(host, port, policy);
  let addresses: LookupAddress[];
  try {
    addresses = await lookupAll(host);
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

const refusal = (why: string) => Object.assign(new Error(`upstream address refused: ${why}`), { code: 'EUPSTREAMFORBIDDEN' });

/**
 * A `lookup` for sockets connecting to `port` that resolves as usual and then keeps only
 * addresses the policy allows for that port; with none left the connection fails, naming why.
 */
export function policedLookup(policy: () => AddressPolicy, port: number): LookupFunction {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const name = canonicalHost(hostname);
    if (METADATA_NAMES.has(name)) return callback(refusal(`${name} is a cloud metadata service`), '');
    const loopback = isLoopbackName(name) ? addressProblem(name, port, policy()) : undefined;
    if (loopback) return callback(refusal(loopback), '');
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const problems: string[] = [];
      const allowed = addresses.filter(({ address }) => {
        const problem = addressProblem(address, port, policy());
        if (problem) problems.push(problem);
        return !problem;
      });
      if (allowed.length === 0) return callback(refusal(problems[0]!), '');
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** The gateway's own Redis (its URL, or every seed of its cluster; see forbidClusterNodes for the rest) as forbidden entries: no channel may point at it. */
export async function redisAddresses(target: RedisTarget): Promise<AddressPolicy['forbidden']> {
  if (typeof target !== 'string') return (await Promise.all(target.cluster.map((seed) => ownAddresses(seed.host, seed.port)))).flat();
  const url = new URL(target);
  return ownAddresses(url.hostname, Number(url.port) || 6379);
}

/**
 * On a Redis Cluster, every node it has (`CLUSTER NODES`: replicas and nodes added later, not only
 * the seeds configured) and each node's cluster bus port, added to `policy.forbidden` now and
 * every `everyMs` after; stops with the returned function. A node answer that cannot be read
 * leaves the list as it was. One Redis has nothing more to add.
 */
export function forbidClusterNodes(redis: { cluster(subcommand: 'NODES'): Promise<unknown> }, target: RedisTarget, policy: AddressPolicy, everyMs = 60_000): () => void {
  if (typeof target === 'string') return () => {};
  const add = async () => {
    let listed: string;
    try {
      listed = String(await redis.cluster('NODES'));
    } catch {
      return;
    }
    for (const node of clusterNodeAddresses(listed)) {
      if (!policy.forbidden.some((f) => f.host === node.host && f.port === node.port)) policy.forbidden.push(node);
    }
  };
  void add();
  const timer = setInterval(() => void add(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The `host:port` of each node and of its bus, from `CLUSTER NODES` (`<id> <ip>:<port>@<bus>[,<hostname>] …`). */
export function clusterNodeAddresses(listed: string): AddressPolicy['forbidden'] {
  const entries: AddressPolicy['forbidden'] = [];
  for (const line of listed.split('\n')) {
    const match = /^\S+ \[?([^\s@\]]*?)\]?:(\d+)@(\d+)/.exec(line.trim());
    if (!match || !match[1]) continue;
    const host = match[1];
    entries.push({ host, port: Number(match[2]) }, { host, port: Number(match[3]) });
  }
  return entries;
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
