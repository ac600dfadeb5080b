"""How long a test may wait for something before it calls it a hang.

A test asserts what happened, not how fast: a bound on a clock difference only catches a hang,
so it sits far above any machine's time, loaded or not (speed is measured in bench/).
``tests/unit/test_no_wall_time_asserts.py`` holds every test to it.
"""

from __future__ import annotations

# seconds: the smallest bound a test may put on a difference of clock readings or on its own wait
HANG = 60.0
