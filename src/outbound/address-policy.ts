import ipaddr from 'ipaddr.js';
import { isIP } from 'node:net';

/**
 * Which IP addresses the service may connect to when a customer names the target (a knowledge-base URL, a
 * webhook): the server-side request forgery (SSRF) rules. Ranges come from ipaddr.js's `range()`, not from
 * hand-written tables.
 *
 * - Public unicast addresses (IPv4 `unicast`; IPv6 `unicast` inside 2000::/3, the global unicast block) are
 *   allowed.
 * - Loopback, private (RFC 1918), link-local, IPv6 unique-local and carrier-grade NAT addresses are refused
 *   unless `allowPrivateAddresses` (development and tests).
 * - Everything else is always refused: unspecified, broadcast, multicast, reserved, documentation,
 *   benchmarking, Teredo, and IPv6 outside 2000::/3 (which covers the deprecated IPv4-compatible ::a.b.c.d).
 * - IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-translated, NAT64 64:ff9b::/96,
 *   6to4 2002::/16) are judged by that IPv4 address: they reach it.
 * - Cloud metadata addresses are always refused, even with `allowPrivateAddresses` (stricter than the
 *   setting's name: nothing in development needs the instance's credentials).
 */
export interface AddressPolicy {
  /** Allow loopback, private, link-local, unique-local and carrier-grade NAT targets. */
  allowPrivateAddresses: boolean;
  /** Exact addresses allowed whatever their range (a test's own loopback server), metadata addresses excepted. */
  allowedAddresses?: readonly string[];
}

/**
 * Instance metadata and platform endpoints of the cloud providers: AWS (IPv4, IPv6, ECS task metadata, the
 * VPC resolver), GCP, Azure (IMDS and the WireServer, a public address), Alibaba, Oracle Cloud Classic,
 * Tencent, and the others that share 169.254.169.254 (OpenStack, DigitalOcean, Hetzner, …).
 */
const METADATA_ADDRESSES = new Set(
  [
    '169.254.169.254',
    '169.254.170.2',
    '169.254.169.253',
    '168.63.129.16',
    '100.100.100.200',
    '192.0.0.192',
    '169.254.0.23',
    'fd00:ec2::254',
    'fd00:ec2::23',
  ].map((address) => ipaddr.parse(address).toNormalizedString()),
);

const PRIVATE_RANGES: ReadonlySet<string> = new Set(['loopback', 'private', 'linkLocal', 'uniqueLocal', 'carrierGradeNat']);

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
};

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** The IPv4 address an IPv6 address stands for, when it is one of the forms that carry one. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  const fromLast32 = () => new ipaddr.IPv4([parts[6] >> 8, parts[6] & 0xff, parts[7] >> 8, parts[7] & 0xff]);
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return fromLast32();
    case 'rfc6052':
      // 64:ff9b::/96 carries the address in its last 32 bits; the local-use 64:ff9b:1::/48 is refused as reserved.
      return parts[2] === 0 ? fromLast32() : undefined;
    case '6to4':
      return new ipaddr.IPv4([parts[1] >> 8, parts[1] & 0xff, parts[2] >> 8, parts[2] & 0xff]);
    default:
      return undefined;
  }
}

/** Why the policy refuses the address (a phrase such as "a loopback address"), or undefined when it is allowed. */
export function refusalReason(address: string, policy: AddressPolicy): string | undefined {
  if (!isIP(address)) return 'not an IP address';
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') parsed = embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed;
  if (METADATA_ADDRESSES.has(parsed.toNormalizedString())) return 'a cloud metadata address';
  if (
    policy.allowedAddresses?.some((allowed) => isIP(allowed) && ipaddr.parse(allowed).toNormalizedString() === parsed.toNormalizedString())
  ) {
    return undefined;
  }
  const range = parsed.range();
  const isPublic = range === 'unicast' && (parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(GLOBAL_UNICAST));
  if (isPublic) return undefined;
  if (PRIVATE_RANGES.has(range) && policy.allowPrivateAddresses) return undefined;
  return RANGE_WORDS[range] ?? 'a reserved address';
}
