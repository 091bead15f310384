import { describe, expect, it } from 'vitest';
import { canonicalAddress, canonicalHost } from './address-forms.ts';
import { addressProblem, baseUrlProblem, clusterNodeAddresses, forbidClusterNodes, type AddressPolicy } from './upstream-address-policy.ts';

const policy: AddressPolicy = { allowPrivate: true, forbidden: [{ host: '127.0.0.1', port: 6390 }] };

describe('canonical forms of an address', () => {
  it('reads IPv4 carried in IPv6 as that IPv4 address, in every spelling', () => {
    for (const form of ['::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1', '[::FFFF:7F00:0001]', '::127.0.0.1', '::7f00:1', '::ffff:0:7f00:1', '64:ff9b::7f00:1']) {
      expect(canonicalAddress(form), form).toBe('127.0.0.1');
    }
    expect(canonicalAddress('::1')).toBe('::1');
    expect(canonicalAddress('::')).toBe('::');
    expect(canonicalAddress('2001:DB8:0:0::1')).toBe('2001:db8::1');
  });

  it('reads a name as DNS does: no trailing dot, any case', () => {
    expect(canonicalHost('LocalHost.')).toBe('localhost');
    expect(canonicalHost('[::ffff:7f00:1]')).toBe('127.0.0.1');
  });
});

describe('the own-Redis refusal', () => {
  it('holds for every spelling of a loopback address, and only on its port', async () => {
    const spellings = [
      'http://127.0.0.1:6390', 'http://[::ffff:127.0.0.1]:6390', 'http://[::ffff:7f00:1]:6390', 'http://localhost.:6390',
      'http://LOCALHOST:6390', 'http://redis.localhost:6390', 'http://2130706433:6390', 'http://0x7f.1:6390', 'http://0177.0.0.1:6390',
      'http://127.1:6390', 'http://127.0.0.2:6390', 'http://[::1]:6390', 'http://[::127.0.0.1]:6390', 'http://[64:ff9b::7f00:1]:6390',
    ];
    for (const url of spellings) expect(await baseUrlProblem(url, policy), url).toMatch(/own Redis/);
    expect(await baseUrlProblem('http://[::ffff:7f00:1]:6391', policy)).toBeUndefined();
  });

  it('refuses the unspecified address in either family, and link-local carried in IPv6', async () => {
    for (const url of ['http://0.0.0.0:6391', 'http://0:6391', 'http://[::]:6391', 'http://[::ffff:0.0.0.0]:6391', 'http://[::ffff:a9fe:a9fe]/']) {
      expect(await baseUrlProblem(url, policy), url).toMatch(/link-local|unspecified/);
    }
  });

  it('applies the private-address rule to mapped forms too', () => {
    const strict = { ...policy, allowPrivate: false };
    expect(addressProblem('::ffff:a00:1', 80, strict)).toMatch(/private/);
    expect(addressProblem('::ffff:c0a8:1', 80, strict)).toMatch(/private/);
    expect(addressProblem('::ffff:808:808', 80, strict)).toBeUndefined();
  });
});

describe("a Redis Cluster's nodes", () => {
  it('are every node CLUSTER NODES lists, with its bus port, IPv6 and hostnames included', () => {
    const listed = [
      '07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,node-4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected',
      '67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922',
      '292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 2001:db8::1:30001@31001 myself,master - 0 0 1 connected 0-5460',
      'e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :0@0 handshake,noaddr - 0 0 0 disconnected',
      '',
    ].join('\n');
    expect(clusterNodeAddresses(listed)).toEqual([
      { host: '127.0.0.1', port: 30004 }, { host: '127.0.0.1', port: 31004 },
      { host: '127.0.0.1', port: 30002 }, { host: '127.0.0.1', port: 31002 },
      { host: '2001:db8::1', port: 30001 }, { host: '2001:db8::1', port: 31001 },
    ]);
  });

  it('are refused once read, beside the seeds configured', async () => {
    const seeds: AddressPolicy = { allowPrivate: true, forbidden: [{ host: '127.0.0.1', port: 7000 }] };
    const listed = '1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n2 127.0.0.1:7001@17001 slave 1 0 0 1 connected\n';
    const stop = forbidClusterNodes({ cluster: async () => listed }, { cluster: [{ host: '127.0.0.1', port: 7000 }], tls: false }, seeds);
    stop();
    await expect.poll(() => seeds.forbidden.length).toBe(4);
    for (const port of [7001, 17000, 17001]) expect(await baseUrlProblem(`http://127.0.0.1:${port}`, seeds), String(port)).toMatch(/own Redis/);
  });
});
