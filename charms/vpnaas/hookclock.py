"""Where one charm run's time goes, by phase: a profiler the bench turns on, off otherwise.

The charm's code marks its phases (``with CLOCK.phase("plan"):``): reading the relations,
planning, the route policy, rendering the step, the SSH login, the step on the VNF, reading its
report, publishing. A phase's time is its own: a phase entered inside another pauses the outer
one, so the phases of a run add up to the time the charm spent in them. Counters
(``CLOCK.count``) say how much work a phase had (databags read, peers validated, relations
written).

Only when the environment names a directory in ``VPNAAS_HOOK_PROFILE`` (the testbed's bench and
``testbed.hookprofile`` set it; Juju never does) does ``dump`` write the run's record there, one
JSON line per run in a file per unit; otherwise nothing is written and the clock costs a few
``perf_counter`` calls per phase. The VNF-side step reports its own times (``TIMING`` lines,
``vnfscript``) only when the run is profiled (``enabled``). Standard library only.
"""
import contextlib
import json
import os
import re
import time
from typing import Any, Dict, Iterator, List, Optional

ENV = "VPNAAS_HOOK_PROFILE"
_UNIT = re.compile(r"[a-z][a-z0-9-]{0,62}/[0-9]{1,9}")


class Clock(object):
    """Exclusive time per phase and counters, for one charm run."""

    def __init__(self) -> None:
        self.phases: Dict[str, float] = {}
        self.counts: Dict[str, int] = {}
        #: Seconds per function of the VNF-side steps (their TIMING lines), summed over the run.
        self.vnf: Dict[str, float] = {}
        self._stack: List[List[Any]] = []     # [name, started] of the open phases, innermost last
        self.started = time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        now = time.perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self._add(outer[0], now - outer[1])
        self._stack.append([name, now])
        try:
            yield
        finally:
            now = time.perf_counter()
            self._add(name, now - self._stack.pop()[1])
            if self._stack:
                self._stack[-1][1] = now

    def _add(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    def since_start(self, name: str) -> None:
        """Everything from the clock's start until now is ``name`` (the imports after this module's)."""
        self._add(name, time.perf_counter() - self.started)

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def vnf_times(self, timings: Dict[str, float]) -> None:
        for name, seconds in timings.items():
            self.vnf[name] = self.vnf.get(name, 0.0) + seconds

    def record(self, environ: Dict[str, str]) -> Dict[str, Any]:
        return {"unit": environ.get("JUJU_UNIT_NAME", ""), "hook": environ.get("JUJU_DISPATCH_PATH", ""),
                "context": environ.get("JUJU_CONTEXT_ID", ""),
                "total": round(time.perf_counter() - self.started, 6),
                "phases": {k: round(v, 6) for k, v in sorted(self.phases.items())},
                "counts": dict(sorted(self.counts.items())),
                "vnf": {k: round(v, 6) for k, v in sorted(self.vnf.items())}}


#: This process's clock (one charm run per process).
CLOCK = Clock()


def enabled(environ: Optional[Dict[str, str]] = None) -> bool:
    return bool((os.environ if environ is None else environ).get(ENV))


def dump(environ: Optional[Dict[str, str]] = None) -> None:
    """Append this run's record to ``$VPNAAS_HOOK_PROFILE/<unit>.jsonl`` when profiling is on. A
    profile that cannot be written is not a failure of the hook."""
    env = dict(os.environ if environ is None else environ)
    directory = env.get(ENV, "")
    unit = env.get("JUJU_UNIT_NAME", "")
    if not directory or not _UNIT.fullmatch(unit):
        return
    line = json.dumps(CLOCK.record(env), sort_keys=True) + "\n"
    try:
        fd = os.open(os.path.join(directory, unit.replace("/", "-") + ".jsonl"),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass
