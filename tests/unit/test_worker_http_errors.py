"""An HTTP target's error, stored on the run and logged, never shows the URL's credentials,
path or query: a library message that could carry the URL (in any normalisation) is replaced
by the error's type and the scheme and host."""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
import pytest
from yarl import URL

from duetime_worker.targets.http.request import described_error

TARGET = "https://user:tok@Host/?k=v"


@pytest.mark.parametrize(
    "message",
    [
        f"Cannot connect to {URL(TARGET)}",  # yarl's normalisation: host lowercased
        f"Cannot connect to {str(URL(TARGET)).replace('user:', '')}",  # the password alone
        "refused the password tok",
        "bad request for /?k=v",
        "see https://host/",
    ],
)
def test_a_message_that_could_show_the_url_is_dropped(message: str) -> None:
    described = described_error(aiohttp.ClientError(message), TARGET, urlsplit(TARGET))
    assert described == "ClientError calling https://host"


def test_a_plain_message_is_kept() -> None:
    error = aiohttp.ClientError("Server disconnected")
    assert described_error(error, TARGET, urlsplit(TARGET)) == "ClientError: Server disconnected"
