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

/** IPv4-mapped and -compatible IPv6 (`::ffff:10.0.0.1`) are judged as the IPv4 inside. */
function embeddedIpv4(address: string): string | null {
  const match = /^(?:0{0,4}:){2,5}(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match?.[1]) return match[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] && hex[2]) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
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
  if (!allowPrivate) {
    if (isIP(host) !== 0 && isPrivateAddress(host)) {
      throw validationError('/body/url', 'must not point to a private, loopback or link-local address');
    }
    if (host === 'localhost' || host.endsWith('.localhost')) {
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
