import { isIPv4, isIPv6 } from 'node:net';

/**
 * The address sign-in failures are counted under: an IPv4 address as it is (an IPv4-mapped IPv6
 * address as its IPv4 form, so one client is one count however the socket reports it), and an
 * IPv6 address by its /64, the block one host or one customer is routinely given: counting each
 * of its 2^64 addresses apart would let one attacker start as many fresh counts as it likes.
 */
export function signInAddress(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  return `${expandIPv6(ip.replace(/%.*$/, '')).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, `::` filled in, an embedded IPv4 tail converted. */
function expandIPv6(ip: string): string[] {
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  const text = tail
    ? ip.slice(0, tail.index) + [[tail[1], tail[2]], [tail[3], tail[4]]].map(([a, b]) => ((Number(a) << 8) | Number(b)).toString(16)).join(':')
    : ip;
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((group) => Number.parseInt(group || '0', 16).toString(16));
}
