"""What a component adds to the generic VPNaaS charm, as an object the charm calls.

The generic charm (``charm_base.VpnaasCharm``) owns the tunnels: events, the one reconcile, the
SSH proxy and tunnel actions, the status. A component (an OAI network function, later a 5G one)
does not override any of that; it is a ``Workload`` the charm composes (``workload_type``) and
calls at fixed points:

* ``step(plan, step)``: add its files and calls to the reconcile's single remote step (they run
  after the tunnels are applied, in the same session);
* ``wants_session(plan)``: whether it has work on the VNF although the tunnels did not change
  (e.g. a service waiting for a handshake);
* ``observed(plan, obs)``: what the VNF reported after a session (its ``COMPONENT`` lines);
* ``status(plan, obs, tunnel_status)``: the unit status, from the tunnels' own;
* ``teardown(step)``: its part of the charm's removal;
* its own actions, observed in ``__init__``.

``waits_for_tunnels`` says whether it can wait for its tunnels (it then asks its peers for
``peer-keys``, the wake-up when its key is configured there). The base class is the generic
charm's workload: nothing of its own.
"""
from typing import Any

from ops.framework import Object
from ops.model import StatusBase

from vpnaas.core import model
from vpnaas.vnf import vnfscript


class Workload(Object):
    #: True for a component that can wait for its tunnels (see the module docstring).
    waits_for_tunnels = False

    @classmethod
    def of(cls, component: Any, description: Any = None, ue: Any = None) -> Any:
        """The workload class of ``component`` (a registry.Component whose workload kind names this
        class; ``description`` and ``ue``: the objects its entry names, resolved by charm/entry.py):
        the generic charm's has nothing of its own."""
        return cls

    def __init__(self, charm: Any) -> None:
        super().__init__(charm, "workload")
        self.charm = charm

    def step(self, plan: model.Plan, step: vnfscript.Step) -> None:
        """Add the component's files and calls to the reconcile's step (see remote.tunnel_step)."""

    def wants_session(self, plan: model.Plan) -> bool:
        return False

    def awaits_peer_keys(self) -> bool:
        """Whether a peer's ``peer-keys`` (its word that it configured this unit's key) can matter
        now: the hook gate lets a hook through for a change of them only then (relation_cache)."""
        return self.waits_for_tunnels

    def observed(self, plan: model.Plan, obs: Any) -> None:
        """After a session: what the VNF reported (``obs``, a remote.Observation)."""

    def status(self, plan: model.Plan, obs: Any, tunnel_status: StatusBase) -> StatusBase:
        return tunnel_status

    def teardown(self, step: vnfscript.Step) -> None:
        """Add the component's own removal calls (its service) to the teardown step."""
