"""The root cause of a network failure, named in the one line envcheck prints (no --debug).

rattler and uv give a chain, outermost first ('error sending request for url (...)' /
'Caused by: dns error' / 'Caused by: failed to lookup address information: ...'); urllib gives
one reason ('[Errno -2] Name or service not known'). The innermost cause is the fact; the kind
(DNS, refused, TLS, timeout, proxy, no route) says what to fix.
"""

from __future__ import annotations

from envcheck.text import without_prefix

# (kind, words any of which in the chain (lower-case) says it), checked in this order
KINDS = (
    ("proxy", ("proxy", "tunnel error")),  # reqwest: CONNECT through HTTPS_PROXY failed
    ("DNS lookup failed", ("dns error", "lookup address", "name or service not known",
                           "temporary failure in name resolution", "nodename nor servname",
                           "no address associated", "getaddrinfo", "errno -2", "errno -3")),
    ("connection refused", ("connection refused", "errno 111")),
    ("TLS failed", ("certificate", "tls", "ssl", "handshake")),
    ("no route to the host", ("network is unreachable", "no route to host", "errno 101",
                              "errno 113")),
    ("timed out", ("timed out", "timeout", "deadline")),
    ("connection reset", ("connection reset", "broken pipe", "connection closed")),
)


def causes(message: str) -> list[str]:
    """The chain, outermost first, 'Caused by:' prefixes dropped."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    out = []
    for ln in lines:
        for prefix in ("Caused by:", "caused by:"):
            ln = without_prefix(ln, prefix).strip()
        if ln:
            out.append(ln)
    return out


def kind_of(message: str) -> str:
    text = message.lower()
    return next((kind for kind, words in KINDS if any(w in text for w in words)), "")


def root_cause(message: str) -> str:
    """'DNS lookup failed: failed to lookup address information: Name or service not known'."""
    chain = causes(message)
    inner = chain[-1] if chain else "no message"
    kind = kind_of(message)
    return f"{kind}: {inner}" if kind and kind.lower() not in inner.lower() else inner
