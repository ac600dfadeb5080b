"""What a message's MAC covers (auth.Binding): the key, the launch (its nonce, run id,
MASTER_ADDR:PORT, world size), the sender rank, the phase and the bytes. Changing any one of
them breaks verification, so a message recorded from another launch, phase or rank is refused."""

from __future__ import annotations

import dataclasses

import pytest

from envcheck.verify.job import auth

BOUND = auth.Binding(key=b"k" * 32, run_id="1234.0", where="10.0.0.1:29500", world=4,
                     nonce=auth.fresh_nonce())
VALUE = {"code": 0, "line": "verify job: pass", "facts": "ab" * 32}


def test_a_message_verifies_under_the_binding_it_was_signed_with():
    assert BOUND.verify(0, "verdict", BOUND.sign(0, "verdict", VALUE)) == VALUE


@pytest.mark.parametrize(("field", "other"), [
    ("key", b"j" * 32),
    ("run_id", "1234.1"),
    ("where", "10.0.0.1:29501"),
    ("where", "10.0.0.2:29500"),
    ("world", 5),
    ("nonce", "another launch"),  # BOUND's own is fresh: a fixed value here keeps the ids
    ("nonce", ""),                # equal in every pytest-xdist worker's collection
])
def test_changing_any_launch_field_breaks_verification(field, other):
    signed = BOUND.sign(0, "verdict", VALUE)
    with pytest.raises(auth.AuthError, match="not signed with this job's secret for this "
                                             "launch, phase and rank"):
        dataclasses.replace(BOUND, **{field: other}).verify(0, "verdict", signed)


def test_another_sender_rank_breaks_verification():
    signed = BOUND.sign(1, "arrived/1", {"nonce": "x"})
    with pytest.raises(auth.AuthError):
        BOUND.verify(2, "arrived/1", signed)


def test_another_phase_breaks_verification():
    signed = BOUND.sign(0, "roll", VALUE)
    with pytest.raises(auth.AuthError):
        BOUND.verify(0, "verdict", signed)


def test_changed_bytes_break_verification():
    signed = BOUND.sign(0, "verdict", VALUE)
    forged = signed.replace('"code":0', '"code":2')
    assert forged != signed
    with pytest.raises(auth.AuthError):
        BOUND.verify(0, "verdict", forged)


def test_fields_cannot_be_shifted_between_one_another():
    """The covered fields are one JSON array: moving a character across a boundary (run id
    '1', where '2:3' against run id '12', where ':3') changes what is signed."""
    a = auth.Binding(b"k" * 32, "1", "2:3", 4, "")
    b = auth.Binding(b"k" * 32, "12", ":3", 4, "")
    assert a.mac(0, "p", b"{}") != b.mac(0, "p", b"{}")


def test_the_session_nonce_changes_with_every_ranks_nonce():
    rank0, others = auth.fresh_nonce(), [auth.fresh_nonce() for _ in range(3)]
    base = auth.session_nonce(rank0, [rank0, *others])
    assert auth.session_nonce(rank0, [rank0, *others]) == base
    assert auth.session_nonce(auth.fresh_nonce(), [rank0, *others]) != base
    for i in range(1, 4):
        changed = [rank0, *others]
        changed[i] = auth.fresh_nonce()
        assert auth.session_nonce(rank0, changed) != base
    assert auth.session_nonce(rank0, [rank0, *others[:2], ""]) != base


def test_nonces_are_fresh():
    drawn = {auth.fresh_nonce() for _ in range(1000)}
    assert len(drawn) == 1000
    assert all(len(n) == 2 * auth.NONCE_BYTES for n in drawn)


def test_an_oversized_or_unsigned_value_is_refused():
    with pytest.raises(auth.AuthError, match="more than the 10 allowed"):
        BOUND.verify(0, "verdict", BOUND.sign(0, "verdict", VALUE), limit=10)
    with pytest.raises(auth.AuthError):
        BOUND.verify(0, "verdict", '{"code": 0}')
