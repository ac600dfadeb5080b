"""Network failures name their root cause: rattler's and uv's cause chains and urllib's reasons
as they really read (copied from runs against an unresolvable host, a closed port and a
closed proxy port)."""

from __future__ import annotations

import pytest

from envcheck.network import root_cause

DNS = """error sending request for url (https://nonexistent-host.invalid/channel/noarch/repodata_shards.msgpack.zst)
Caused by: client error (Connect)
Caused by: dns error
Caused by: error resolving DNS
Caused by: failed to lookup address information: Name or service not known"""
REFUSED = """error sending request for url (https://127.0.0.1:9/channel/linux-64/repodata_shards.msgpack.zst)
Caused by: client error (Connect)
Caused by: tcp connect error
Caused by: Connection refused (os error 111)"""
PROXY = """error sending request for url (https://conda.anaconda.org/conda-forge/linux-64/repodata_shards.msgpack.zst)
Caused by: client error (Connect)
Caused by: tunnel error: failed to create underlying connection
Caused by: tcp connect error
Caused by: Connection refused (os error 111)"""


@pytest.mark.parametrize("message, expected", [
    (DNS, "DNS lookup failed: failed to lookup address information: Name or service not known"),
    (REFUSED, "Connection refused (os error 111)"),
    (PROXY, "proxy: Connection refused (os error 111)"),
    ("[Errno -2] Name or service not known", "DNS lookup failed: [Errno -2] Name or service "
     "not known"),
    ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate",
     "TLS failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed "
     "certificate"),
    ("timed out", "timed out"),
    ("something else", "something else"),
])
def test_the_innermost_cause_with_its_kind(message: str, expected: str) -> None:
    assert root_cause(message) == expected
