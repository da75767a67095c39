"""The worker's target allow-list judges where a connection really ends up."""

from __future__ import annotations

import pytest

from duetime_worker.targets.http.allow_list import TargetPolicy

PUBLIC_ONLY = TargetPolicy.parse([])


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a00:5",  # NAT64 of 10.0.0.5
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "::127.0.0.1",  # IPv4-compatible loopback
        "::ffff:10.0.0.1",  # IPv4-mapped private
        "169.254.169.254",  # cloud metadata
        "224.0.0.1",  # multicast
        "0.0.0.0",  # connects to this host
        "::",
        "127.0.0.1",
        "10.1.2.3",
    ],
)
def test_non_public_addresses_are_refused_however_written(address: str) -> None:
    assert PUBLIC_ONLY.refusal("target.test", address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", "64:ff9b::808:808"])
def test_public_addresses_pass(address: str) -> None:
    assert PUBLIC_ONLY.refusal("target.test", address) is None


def test_a_host_pattern_unlocks_private_addresses_but_never_unusable_ones() -> None:
    internal = TargetPolicy.parse(["*.internal"])
    assert internal.refusal("billing.internal", "10.1.2.3") is None
    assert internal.refusal("billing.internal", "0.0.0.0") is not None
    assert internal.refusal("billing.internal", "169.254.169.254") is not None
    assert internal.refusal("evil.example", "8.8.8.8") is not None
