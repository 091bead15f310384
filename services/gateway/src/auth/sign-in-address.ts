import { isIPv4, isIPv6 } from 'node:net';

/**
 * The address sign-in failures are counted under: an IPv4 address as it is (an IPv4-mapped IPv6
 * address as its IPv4 form, so one client is one count however the socket reports it), and an
 * IPv6 address by its /64, the block one host or one customer is routinely given: counting each
 * of its 2^64 addresses apart would let one attacker start as many fresh counts as it likes.
 */
export function signInAddress(ip: string): string {
  const address = withoutPort(ip.trim());
  if (isIPv4(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  // What a forwarded header said the client was, when it is no address (a proxy's list of
  // proxies ends with what the client wrote): one shared count, never a key of the client's text.
  if (!isIPv6(address)) return NOT_AN_ADDRESS;
  return `${expandIPv6(address.replace(/%.*$/, '')).slice(0, 4).join(':')}::/64`;
}

/** The count of every sign-in whose client address was no address. */
export const NOT_AN_ADDRESS = 'not-an-address';

/** An address with the port some proxies write after it (`1.2.3.4:5678`, `[2001:db8::1]:443`) taken off. */
function withoutPort(text: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text);
  return v4 ? v4[1]! : text;
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
