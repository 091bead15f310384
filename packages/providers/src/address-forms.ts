/**
 * The canonical forms in which the address policy compares hosts, so that every spelling of an
 * address is judged as the address it reaches. Decimal, octal and hexadecimal IPv4 forms
 * (`2130706433`, `0177.1`, `0x7f.1`) are already made dotted by the WHATWG URL parser for
 * http(s) URLs, and resolved addresses come dotted; what is left is IPv4 carried inside IPv6
 * and the spellings of names.
 */
import { isIP } from 'node:net';

/** An IPv6 address as its eight 16-bit groups (a trailing dotted IPv4 is two of them). */
function ipv6Groups(ip: string): number[] {
  let text = ip.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const front = part(head);
  const back = part(tail);
  return tail === undefined ? front : [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
}

/**
 * An address in the one form the policy compares: an IPv4 address carried in IPv6 (mapped
 * `::ffff:a.b.c.d` in any spelling, such as `::ffff:7f00:1`; compatible `::a.b.c.d`; translated
 * `::ffff:0:a.b.c.d`; NAT64 `64:ff9b::a.b.c.d`) as that IPv4 address, since that is where a
 * connection to it goes; any other IPv6 address compressed, in lower case.
 */
export function canonicalAddress(address: string): string {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(ip) !== 6) return ip;
  const g = ipv6Groups(ip);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const v4 = () => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  if (zeros(0, 5) && g[5] === 0xffff) return v4(); // mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(); // translated
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(); // NAT64
  if (zeros(0, 6) && (g[6]! !== 0 || g[7]! > 1)) return v4(); // compatible (not :: or ::1)
  return new URL(`http://[${ip}]`).hostname.slice(1, -1);
}

/**
 * A host name as DNS means it: lower case, without the trailing dot of a fully qualified name
 * (`localhost.` is `localhost`), an address in its canonical form.
 */
export function canonicalHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '');
  return isIP(bare) ? canonicalAddress(bare) : bare;
}

/** `localhost` and any name under it are this machine's loopback (RFC 6761), whatever DNS says. */
export const isLoopbackName = (name: string) => name === 'localhost' || name.endsWith('.localhost');

