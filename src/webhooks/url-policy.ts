import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { validationError } from '../errors.js';

/**
 * Where webhooks may not point unless TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: private,
 * loopback, link-local, unique-local, CGNAT, multicast, reserved and unspecified ranges, so a
 * subscription cannot reach the internal network (SSRF).
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail counts as two), or null. */
function ipv6Groups(address: string): number[] | null {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const head = part(halves[0]);
  const tail = part(halves[1]);
  const groups =
    halves.length === 2
      ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
      : head;
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : null;
}

/**
 * IPv6 forms that carry an IPv4 address are judged as the IPv4 inside: IPv4-compatible
 * `::/96`, IPv4-mapped `::ffff:0:0/96`, SIIT `::ffff:0:0:0/96` and 6to4 `2002::/16`.
 */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (!g) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (g[0] === 0x2002) return v4(g[1] ?? 0, g[2] ?? 0);
  if (zeros(0, 5) && (g[5] === 0 || g[5] === 0xffff)) return v4(g[6] ?? 0, g[7] ?? 0);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6] ?? 0, g[7] ?? 0);
  return null;
}

export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== null) return blocked.check(v4, 'ipv4');
    return blocked.check(bare, 'ipv6');
  }
  return true;
}

/** Creation-time check of a subscriber URL; throws validation_error on `/body/url`. */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError('/body/url', 'must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw validationError('/body/url', 'must use https');
  }
  if (url.username !== '' || url.password !== '') {
    throw validationError('/body/url', 'must not contain credentials');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // `localhost.` is `localhost` as a fully qualified name.
  const name = host.replace(/\.$/, '');
  if (!allowPrivate) {
    if (isIP(host) !== 0 && isPrivateAddress(host)) {
      throw validationError('/body/url', 'must not point to a private, loopback or link-local address');
    }
    if (name === 'localhost' || name.endsWith('.localhost')) {
      throw validationError('/body/url', 'must not point to a private, loopback or link-local address');
    }
  }
  return url.toString();
}

export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

/**
 * A `lookup` for the delivery socket: resolves, refuses if any address is private, and hands
 * the checked address to the connect call itself, so a second resolution cannot rebind.
 */
export function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const bad = addresses.find((a) => isPrivateAddress(a.address));
      if (!allowPrivate && bad) {
        return callback(
          new BlockedAddressError(`${hostname} resolves to the non-public address ${bad.address}`),
          '',
          0,
        );
      }
      const first = addresses[0];
      if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
      if (options.all) return callback(null, addresses as unknown as string, 0);
      return callback(null, first.address, first.family);
    });
  };
}

/** The IP-literal half of the delivery check: sockets skip `lookup` for literal addresses. */
export function checkLiteralHost(url: URL, allowPrivate: boolean): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) {
    throw new BlockedAddressError(`${host} is a non-public address`);
  }
}
