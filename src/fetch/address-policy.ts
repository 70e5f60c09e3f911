import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** An IPv4 or IPv6 address as ipaddr.js parses it. */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Decides whether the URL fetcher may connect to an address: returns why not (a short range
 * name such as `'private'`), or `undefined` when the connection is allowed.
 */
export type AddressPolicy = (address: IpAddress) => string | undefined;

// IANA allocates global IPv6 unicast only from 2000::/3; everything else 'unicast' by
// ipaddr.js's default (the IPv4-compatible ::/96, unassigned space) is not on the internet.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const IPV4_COMPATIBLE_V6 = ipaddr.parseCIDR('::/96');
// Only the well-known NAT64 prefix has a fixed place for the IPv4 address; the local-use
// 64:ff9b:1::/48 stays refused as 'rfc6052'.
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * Parses an address exactly as `dns.lookup` or a normalised URL host spells it (no brackets).
 * Returns `undefined` for anything that is not a plain IP address, so the lenient forms
 * ipaddr.js would also accept (`0x7f.1`) never reach it un-normalised.
 */
export function parseAddress(text: string): IpAddress | undefined {
  return isIP(text) === 0 ? undefined : ipaddr.parse(text);
}

/**
 * Why `address` is not a public internet address, or `undefined` when it is.
 *
 * Public means ipaddr.js's range `'unicast'`; for IPv6 also inside 2000::/3. IPv6 forms that
 * carry an IPv4 address (IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, 6to4) are judged
 * by the IPv4 address inside them.
 *
 * @example nonPublicReason(ipaddr.parse('::ffff:10.0.0.1')) // 'ipv4Mapped of private'
 */
export function nonPublicReason(address: IpAddress): string | undefined {
  if (address instanceof ipaddr.IPv4) {
    const range = address.range();
    return range === 'unicast' ? undefined : range;
  }
  const range = address.range();
  const embedded = embeddedIPv4(address, range);
  if (embedded !== undefined) {
    const reason = nonPublicReason(embedded);
    return reason === undefined ? undefined : `${range} of ${reason}`;
  }
  if (range !== 'unicast') return range;
  if (address.match(IPV4_COMPATIBLE_V6)) return 'ipv4Compatible';
  if (!address.match(GLOBAL_UNICAST_V6)) return 'unallocated';
  return undefined;
}

/**
 * The policy fetchImage applies: only public addresses, or every address when
 * `allowPrivate` is set (development and tests against local servers).
 */
export function addressPolicy(allowPrivate: boolean): AddressPolicy {
  return allowPrivate ? () => undefined : nonPublicReason;
}

/** The IPv4 address an IPv6 address routes to, for the forms that carry one. */
function embeddedIPv4(address: ipaddr.IPv6, range: string): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return ipaddr.fromByteArray(bytes.slice(12)) as ipaddr.IPv4;
    case 'rfc6052':
      return address.match(NAT64_WELL_KNOWN) ? (ipaddr.fromByteArray(bytes.slice(12)) as ipaddr.IPv4) : undefined;
    case '6to4': // 2002:aabb:ccdd::/48
      return ipaddr.fromByteArray(bytes.slice(2, 6)) as ipaddr.IPv4;
    default:
      return undefined;
  }
}
