"""Ctrl-C that lands where Python cannot raise it (a gc callback, a __del__): still an
interrupt. Real signals to real processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support.deadlines import HANG

PROGRAM = textwrap.dedent("""
    import gc, os, signal, sys, threading, time
    from envcheck import interrupts

    interrupts.install()

    {where}

    threading.Timer(0.3, os.kill, (os.getpid(), signal.{signal})).start()
    try:
        {trigger}
        time.sleep(5)  # the interrupt was dropped: the run goes on
        print("went on")
    except KeyboardInterrupt as e:
        print(type(e).__name__)
""")
GC_CALLBACK = """
def slow_callback(phase, info):
    if phase == "start":
        time.sleep(1.0)  # like distributed's GCDiagnosis: Python code inside every collection
gc.callbacks.append(slow_callback)
"""
FINALIZER = """
class Slow:
    def __del__(self):
        time.sleep(1.0)
"""


@pytest.mark.parametrize(("where", "trigger"), [(GC_CALLBACK, "gc.collect()"),
                                                (FINALIZER, "del_me = Slow(); del del_me")])
@pytest.mark.parametrize(("sig", "raised"), [("SIGINT", "KeyboardInterrupt"),
                                             ("SIGTERM", "Terminated")])
def test_a_signal_landing_in_a_callback_python_cannot_raise_from_still_interrupts(
        where, trigger, sig, raised):
    program = PROGRAM.format(where=where, trigger=trigger, signal=sig)
    p = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       timeout=HANG)
    assert p.stdout.strip() == raised, p.stdout + p.stderr
    assert "Exception ignored" not in p.stderr, p.stderr


@pytest.mark.parametrize(("sig", "raised"), [("SIGINT", "KeyboardInterrupt"),
                                             ("SIGTERM", "Terminated")])
def test_a_run_started_with_the_signals_blocked_is_still_interrupted(sig, raised):
    # a parent's signal mask is inherited through fork and exec (seen: a test runner's
    # worker whose mask a commit outside any run had left blocked)
    import signal

    program = PROGRAM.format(where="", trigger="pass", signal=sig)
    p = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       timeout=HANG, preexec_fn=lambda: signal.pthread_sigmask(
                           signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}))
    assert p.stdout.strip() == raised, p.stdout + p.stderr


def test_a_commit_outside_a_run_leaves_the_callers_signal_mask_alone():
    program = textwrap.dedent("""
        import signal
        from envcheck import interrupts
        both = {signal.SIGINT, signal.SIGTERM}
        interrupts.commit()  # a library call's commit point, no run installed
        print(sorted(both & signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # the caller's own choice
        with interrupts.scope():
            inside = both & signal.pthread_sigmask(signal.SIG_BLOCK, [])
        print(sorted(inside), sorted(both & signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    """)
    p = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       timeout=HANG)
    assert p.stdout.split("\n")[:2] == ["[]", "[] [<Signals.SIGTERM: 15>]"], p.stdout + p.stderr
