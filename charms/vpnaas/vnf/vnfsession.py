"""One SSH login of a reconcile: the tunnel step sent with the digest of the facts its plan was
made with, the shipped programs the VNF lacks sent on a second channel, the report read back.
Charm glue without ops: it takes the charm (``charm_base.VpnaasCharm``) for its state.
"""
import contextlib
import logging
from typing import Any, Dict, Iterator, List, Tuple

from vpnaas.core import hookclock, model
from vpnaas.core.hookclock import CLOCK
from vpnaas.vnf import dataplane, remote, ssh, vnfscript

logger = logging.getLogger(__name__)

REMOTE_TIMEOUT = 120
#: Tunnel steps one session may send while the VNF keeps reporting other facts than the plan was
#: made with (the first contact needs two: learn the facts, then apply).
FACTS_ATTEMPTS = 3


@contextlib.contextmanager
def login(target: ssh.Target, keystore: ssh.KeyStore) -> Iterator[ssh.Session]:
    """An SSH session to ``target``, open for the ``with`` block."""
    login = ssh.Session(target, keystore)
    with CLOCK.phase("ssh_login"):
        session = login.__enter__()
    try:
        yield session
    finally:
        login.__exit__(None, None, None)


def run_step(session: ssh.Session, target: ssh.Target, step: vnfscript.Step) -> remote.Observation:
    """Run one VNF-side step in an open session and read its report."""
    with CLOCK.phase("render"):
        step.timed = hookclock.enabled()
        command, program = step.command(target.username, REMOTE_TIMEOUT - 10), step.program().encode()
    with CLOCK.phase("ssh_step"):
        rc, out, err = session.run(command, program, REMOTE_TIMEOUT)
    if rc != 0 and "a password is required" in err:
        raise remote.RemoteError("{} cannot run sudo without a password".format(target.username))
    try:
        with CLOCK.phase("report_parse"):
            obs = remote.parse_report(out, rc, err)
    except remote.RemoteError:
        if err.strip():
            logger.warning("remote step stderr: %s", remote.scrub(err.strip()[-500:]))
        raise
    CLOCK.vnf_times(obs.timings)
    return obs


def apply(charm: Any, session: ssh.Session, target: ssh.Target, plan: model.Plan,
          options: Dict[str, Any]) -> Tuple[model.Plan, remote.Observation]:
    """Send the tunnel step for ``plan`` with the digest of the facts it was made with. The VNF
    applies nothing when its facts differ (first contact, a VNF rebuilt at the same address, a new
    gateway or address, a peer's endpoint name that resolves elsewhere): then the plan is made
    again with what it reported, and sent again in the same login. A plan that the VNF's facts
    make invalid (an operator's address on its management network) is returned with its errors,
    nothing applied. A VNF that lacks a shipped program a device needs (``NEED``, reported before
    its facts are judged: remote.tunnel_step) gets it on a second channel of the same login, then
    the step again (dataplane.py): a first contact is two steps, not three."""
    installed: List[str] = []
    for _ in range(FACTS_ATTEMPTS + len(dataplane.PROGRAMS)):
        known = charm.known_facts()
        obs = run_step(session, target, tunnel_step(charm, plan, known.digest if known else "", options))
        charm.remember_facts(obs.facts)
        if obs.needs:
            install_programs(charm.programs, session, target, obs.needs, installed)
        if obs.facts_changed:
            plan = charm.build_plan()
            if plan.errors:
                return plan, obs
            continue
        if not obs.needs:
            return plan, obs
    raise ssh.SshError("the VNF reported other facts {} times in one session (its addresses are changing); "
                       "retrying at the next event".format(FACTS_ATTEMPTS), transient=True)


def install_programs(programs: Dict[str, dataplane.Program], session: ssh.Session, target: ssh.Target,
                     names: List[str], installed: List[str]) -> None:
    """Send the programs the VNF asked for (``NEED``; dataplane.py), each at most once per
    session: a VNF that asks again for what it just received cannot keep it (a full disk)."""
    wanted = dataplane.needed(programs, names)
    if wanted is None:
        raise remote.RemoteError("the VNF asked for a program this charm does not ship: {}".format(
            remote.scrub(" ".join(names))[:80]))
    for program in wanted:
        if program.name in installed:
            raise remote.RemoteError("the VNF still lacks {} after it was installed (is {} writable?)".format(
                program.name, dataplane.VNF_DIR))
        logger.info("installing %s %s on %s", program.name, program.version, target.host)
        try:
            dataplane.upload(session, target.username, program)
        except dataplane.DataplaneError as e:
            raise remote.RemoteError(str(e)) from None
        installed.append(program.name)


def tunnel_step(charm: Any, plan: model.Plan, digest: str, options: Dict[str, Any]) -> vnfscript.Step:
    with CLOCK.phase("render"):
        return remote.tunnel_step(plan, digest, component=lambda step: charm.workload.step(plan, step),
                                  programs=charm.programs, **options)
