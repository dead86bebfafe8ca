/**
 * The private-address rule for traffic Parley starts on a tenant's behalf
 * (function `fetch`, webhook deliveries): loopback, private, link-local,
 * shared (CGNAT), multicast, documentation and other reserved ranges are
 * unreachable unless the operator allows them
 * (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true`). Names are checked after DNS
 * resolution, and the connection goes to the address that was checked, so a
 * name cannot be re-pointed between the check and the connection.
 */
import * as Dns from "node:dns"
import * as Net from "node:net"

// Two lists: Node checks an IPv4 address against IPv6 rules too (as `::ffff:a.b.c.d`), so the
// `::ffff:0:0/96` rule below would otherwise refuse every IPv4 address.
const blockedV4 = new Net.BlockList()
const blockedV6 = new Net.BlockList()
for (
  const [network, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.0.2.0", 24],
    ["192.88.99.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4]
  ] as const
) blockedV4.addSubnet(network, prefix, "ipv4")
for (
  const [network, prefix] of [
    ["::", 128],
    ["::1", 128],
    // IPv4-mapped, NAT64 and 6to4 addresses can carry a private IPv4 address.
    ["::ffff:0:0", 96],
    ["64:ff9b::", 96],
    ["64:ff9b:1::", 48],
    ["2002::", 16],
    ["100::", 64],
    ["2001::", 23],
    ["2001:db8::", 32],
    ["fc00::", 7],
    ["fe80::", 10],
    ["ff00::", 8]
  ] as const
) blockedV6.addSubnet(network, prefix, "ipv6")

/** True for an address tenants' traffic may not reach; anything that is not an IP address counts as private. */
export const isPrivateAddress = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const family = Net.isIP(bare)
  if (family === 0) return true
  return family === 4 ? blockedV4.check(bare, "ipv4") : blockedV6.check(bare, "ipv6")
}

export class PrivateAddressRefused extends Error {
  readonly code = "EPARLEYPRIVATE"
}

/**
 * A `lookup` for `http.request` that resolves the name and keeps only public
 * addresses, failing with `PrivateAddressRefused` when none is left.
 */
export const publicOnlyLookup = (
  hostname: string,
  options: Dns.LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | Array<Dns.LookupAddress>, family?: number) => void
): void => {
  Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error !== null) return callback(error, "")
    const allowed = addresses.filter((entry) => !isPrivateAddress(entry.address))
    if (allowed.length === 0) {
      return callback(new PrivateAddressRefused(`${hostname} resolves to a private address`), "")
    }
    if (options.all === true) return callback(null, allowed)
    return callback(null, allowed[0]!.address, allowed[0]!.family)
  })
}
