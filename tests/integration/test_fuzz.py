"""Every RPC of JobService, AdminService and WorkerService, fed type-aware random requests built
from the proto descriptors (testkit/fuzz.py), against the real servers in process on real
PostgreSQL: no answer is INTERNAL or UNKNOWN (an unexpected exception in a handler), and a
refused call leaves the database as it was; 15 requests per RPC (about half a minute).
``bench/fuzz`` runs the same at 10,000+ requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.fuzz import FuzzTarget, Rpc, every_rpc, requests

pytestmark = pytest.mark.timeout(300)

RPCS = every_rpc()
# Fencing tokens as a worker might send them in `duetime-attempt` metadata (gRPC metadata
# values are printable ASCII).
TOKENS = st.sampled_from(["1", "2", "0", "-1", "+1", "1e3", "2147483648", "99999999999", "x", ""])


@pytest.fixture(scope="module")
def target() -> Iterator[FuzzTarget]:
    with FuzzTarget() as started:
        yield started


@pytest.mark.parametrize("rpc", RPCS, ids=[r.name for r in RPCS])
@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_bad_input_is_refused_cleanly(target: FuzzTarget, rpc: Rpc, data: st.DataObject) -> None:
    request = data.draw(requests(rpc.method.input_type, target.words), label="request")
    how = data.draw(st.integers(0, 9), label="credentials")
    target.call(rpc, request, how, data.draw(TOKENS, label="fencing token"))
