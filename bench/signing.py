"""bench/signing: the CPU one signed call costs the worker, by kind, in this process alone: the
Standard Webhooks headers with one and with two secrets (a rotation), and one ES256 ID token
(``duetime_infra.signing``, what ``targets/http/signer.py`` does per call); and what the send of
a call signed ahead (an attempt started ahead of its time) costs instead: its signatures checked
as fitting it and put in its headers. ``bench/herd --sign`` measures the same end to end, beside
calls without signing.

    uv run --frozen python -m bench.signing [--calls 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from duetime_core.jobspec import CallSigning
from duetime_infra.signing import (
    SigningKeys,
    TokenClaims,
    mint_id_token,
    new_signing_key,
    webhook_headers,
)
from duetime_worker.targets.http.signed_ahead import SignedAhead

BODY = b'{"report": "daily"}' * 10
CLAIMS = TokenClaims(
    "https://duetime.example",
    "https://target.example/hook",
    "teams/bench/jobs/0b7e6f0e-0000-4000-8000-000000000001",
    "0b7e6f0e-0000-4000-8000-000000000001/2026-12-06T13:00:00Z",
    1,
)


def per_call(work: Callable[[], object], calls: int) -> float:
    """CPU µs a call of ``work``, over ``calls`` calls."""
    started = time.process_time()
    for _ in range(calls):
        work()
    return (time.process_time() - started) / calls * 1e6


def signed_ahead(keys: SigningKeys) -> Callable[[], object]:
    """A send's work with both signatures made ahead: checked as fitting it, then added."""
    now = int(time.time())
    signed = webhook_headers(keys, CLAIMS.run_key, now, BODY)
    signed["Authorization"] = f"Bearer {mint_id_token(keys, CLAIMS, now)}"
    both = CallSigning.WEBHOOK_AND_ID_TOKEN
    ahead = SignedAhead(1, both, ("one",), BODY, now, signed)

    def send() -> object:
        headers: dict[str, str] = {}
        if ahead.fits(1, both, keys, BODY, int(time.time())):
            headers.update(ahead.headers)
        return headers

    return send


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    one = SigningKeys([new_signing_key("one")])
    two = SigningKeys([*one.active, new_signing_key("two")])
    kinds: dict[str, Callable[[], object]] = {
        "webhook, 1 secret": lambda: webhook_headers(one, CLAIMS.run_key, int(time.time()), BODY),
        "webhook, 2 secrets": lambda: webhook_headers(two, CLAIMS.run_key, int(time.time()), BODY),
        "ID token (ES256)": lambda: mint_id_token(one, CLAIMS, int(time.time())),
        "both, signed ahead": signed_ahead(one),
    }
    for name, work in kinds.items():
        rounds = [per_call(work, args.calls) for _ in range(args.rounds)]
        print(f"{name:20} CPU µs a call: {' '.join(f'{r:.1f}' for r in rounds)}")


if __name__ == "__main__":
    main()
