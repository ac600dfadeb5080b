"""Ctrl-C that lands where Python cannot raise it (a gc callback, a __del__): still an
interrupt. Real signals to real processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

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
                       timeout=30)
    assert p.stdout.strip() == raised, p.stdout + p.stderr
    assert "Exception ignored" not in p.stderr, p.stderr
