"""The console's sealed session cookie: what it seals opens with any key of the ring, and
nothing else opens: an altered cookie, another ring's, an old one, another format's."""

from __future__ import annotations

import base64

import pytest

from duetime_console.session import Session, SessionSealer
from duetime_infra.secrets.keyring import new_keyring

HOUR = 3600.0


def test_a_sealed_session_opens_whole_and_hides_its_token() -> None:
    sealer = SessionSealer(new_keyring("k1"), HOUR)
    session = Session(token="dtt_secret-team-token", role="team", team="search", zone="Asia/Tokyo")
    cookie = sealer.seal(session)
    assert "dtt_secret" not in cookie
    assert "secret-team-token" not in base64.urlsafe_b64decode(cookie.split(".")[2] + "==").decode(
        "latin-1"
    )
    assert sealer.open(cookie) == session


def test_a_new_key_made_current_still_opens_the_old_keys_sessions() -> None:
    old = new_keyring("k1")
    rotated = old.with_new_key("k2")
    before = SessionSealer(old, HOUR).seal(Session(token="t"))
    after = SessionSealer(rotated, HOUR)
    assert after.open(before) is not None
    assert after.seal(Session(token="t")).startswith("s1.k2.")
    # Once the old key is removed, its sessions are gone.
    assert SessionSealer(rotated.without("k1"), HOUR).open(before) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),  # altered
        lambda c: c.replace("s1.", "s2.", 1),  # another format
        lambda c: c.replace(".k1.", ".k9.", 1),  # a key the ring does not have
        lambda c: "garbage",
        lambda c: "s1.k1.%%%",
    ],
)
def test_an_altered_or_foreign_cookie_is_no_session(change: object) -> None:
    sealer = SessionSealer(new_keyring("k1"), HOUR)
    cookie = sealer.seal(Session(token="t"))
    assert callable(change)
    assert sealer.open(change(cookie)) is None


def test_another_rings_cookie_is_no_session() -> None:
    mine, theirs = SessionSealer(new_keyring("k1"), HOUR), SessionSealer(new_keyring("k1"), HOUR)
    assert mine.open(theirs.seal(Session(token="t"))) is None


def test_a_session_older_than_its_lifetime_is_no_session() -> None:
    sealer = SessionSealer(new_keyring("k1"), HOUR)
    session = Session(token="t", issued_at=1_000_000.0)
    cookie = sealer.seal(session)
    assert sealer.open(cookie, now=1_000_000.0 + HOUR - 1) == session
    assert sealer.open(cookie, now=1_000_000.0 + HOUR) is None
    # Sealed by a copy whose clock is ahead: a minute's grace, no more.
    assert sealer.open(cookie, now=1_000_000.0 - 30) == session
    assert sealer.open(cookie, now=1_000_000.0 - 120) is None


def test_signing_in_makes_a_new_csrf_token() -> None:
    anonymous = Session()
    signed_in = anonymous.signed_in_as("t", "team", "search", "UTC")
    assert signed_in.csrf != anonymous.csrf
    assert signed_in.signed_in
    assert not anonymous.signed_in
