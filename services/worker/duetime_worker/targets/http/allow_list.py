"""Which addresses HTTP targets may reach: the operators' allow-list of host patterns and
networks, applied to every address a host name resolves to.

- An address inside a listed network is allowed.
- When the list is not empty, anything else needs its host name to match a listed pattern
  (``fnmatch`` style, e.g. ``*.internal.example``).
- Loopback, private, link-local, metadata and other non-public addresses are refused unless a
  listed network holds them; a matching host pattern unlocks loopback and private addresses but
  never link-local or metadata ones (those must be listed as networks).
"""

from __future__ import annotations

import fnmatch
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata services that are not link-local everywhere.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("fd00:ec2::254"),
    ipaddress.ip_address("100.100.100.200"),
}


@dataclass(frozen=True)
class TargetPolicy:
    networks: tuple[IPNetwork, ...] = ()
    patterns: tuple[str, ...] = ()

    @classmethod
    def parse(cls, items: Sequence[str]) -> TargetPolicy:
        networks: list[IPNetwork] = []
        patterns: list[str] = []
        bad: list[str] = []
        for item in items:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
                continue
            except ValueError:
                pass
            if "/" in item or not item or any(c.isspace() for c in item):
                bad.append(item)
            else:
                patterns.append(item.lower().rstrip("."))
        if bad:
            raise ValueError(f"not a host pattern or network: {', '.join(map(repr, bad))}")
        return cls(tuple(networks), tuple(patterns))

    def refusal(self, host: str, address: str) -> str | None:
        """Why ``host`` may not be reached at ``address``; None when it may."""
        try:
            ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
        ip = _embedded_ipv4(ip)
        if any(ip in network for network in self.networks):
            return None
        name = host.lower().rstrip(".")
        matched = any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
        if (self.networks or self.patterns) and not matched:
            return f"{host} ({ip}) is not in the target allow-list"
        if ip in _METADATA or ip.is_link_local:
            return f"{host} resolves to a link-local or metadata address ({ip})"
        if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
            # 0.0.0.0 and :: connect to this host; none of these is ever a target.
            return f"{host} resolves to an unusable address ({ip})"
        if ip.is_global:
            return None
        if matched and (ip.is_loopback or ip.is_private):
            return None
        return f"{host} resolves to a non-public address ({ip}) that is not allowed"


_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address leads to (mapped, 6to4, Teredo, NAT64, IPv4-compatible),
    so the policy judges where a connection really ends up; otherwise ``ip`` itself."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip
