"""OAI component steps: install, configure and the start gate, as shipped VNF-side files.

Pure module (no ops, no SSH). A component (``lte.hss``, ``lte.mme``, ``lte.spgw``, ``lte.enb``)
describes its pinned sources, build steps, configuration files and service; this module turns
that, plus validated charm config and the tunnel plan, into ``vnfscript.Step`` programs made of
the files in ``vnf/oai/`` (``oai-lib.sh``, ``install.sh``, ``configure*.sh``, ``gate.sh``, the
renderer ``render.py``) and calls whose values are positional arguments. The HSS keys travel in the
step's data section (``Step.secret``), so they are never on a command line, in the program text,
in the report or in a log. Reports are read with ``vnfscript.parse``.

Report lines: ``PROGRESS <n>/<m> <text>`` (progress display), ``NOTE <text>``, ``RESULT <key>
<value>``, ``ERROR <text>`` and, in the reconcile's component part, ``COMPONENT <key> <value>``.
"""

import base64
import json
from typing import Any, Callable, Dict, Generic, Iterable, List, Mapping, NamedTuple, Optional, Tuple, TypeVar, Union

from vpnaas.core import model
from vpnaas.core.validation import InvalidValue
from vpnaas.oai import addresses as oai_addresses
from vpnaas.oai import validation as oai_validation
from vpnaas.vnf import vnfscript

PREFIX = "/usr/local/etc/oai"
SOURCE_ROOT = "/opt/oai"
STATE_DIR = "/var/lib/vpnaas/oai"
LOG_DIR = "/var/log/vpnaas"
SBIN = "/usr/local/sbin"
#: How long the gate waits, inside one reconcile, for a handshake that is about to happen
#: (the peer was configured a moment ago): a bounded wait on the real condition, not a sleep.
GATE_HANDSHAKE_WAIT = 8
CONFIGURE_TIMEOUT = 1800
LIB = "oai/oai-lib.sh"
#: Where OAI's EPC repositories keep their git submodules.
GIT_SUBMODULES = "build/git_submodules/"
#: freeDiameter as the HSS and the MME builds of October 2020 got it: their helpers pull its
#: master, which was this commit on both days (docs/oai.md, "Pinned submodules").
FREEDIAMETER_PIN = (GIT_SUBMODULES + "freeDiameter", "673ea5000420427fd4eaf5f82cd8c3d28c8ffc77",
                    "master on 2020-10-22: 'Enable DISABLE_PEER_EXPIRY', an idle MME is not dropped after 3600 s")

#: The charm's options as Juju hands them over (``dict(self.config)``): whatever the operator set,
#: hence Any; every value passes oai_validation before it is used.
Options = Mapping[str, Any]
#: A placeholder's value in the renderer's spec: text, or ``{"iface_of": <ip>}`` / ``{"var": <name>}``
#: for what only the VNF knows (vnf/oai/render.py resolves them).
Token = Union[str, Dict[str, str]]
#: An object of a JSON document the charm sends to the VNF (a file entry or an edit of the
#: renderer's spec, the subscriber provisioning spec). Built here and only serialized; the
#: fields are documented where the VNF reads them (vnf/oai/render.py, vnf/oai/provision.py).
JsonObject = Dict[str, object]
#: The renderer's spec: ``{"files": [file entry, ...]}``.
RenderSpec = Dict[str, List[JsonObject]]
#: The type of a component's validated configuration values (a NamedTuple of its own module).
V = TypeVar("V")
Addresses = oai_addresses.Addresses


class Common(NamedTuple):
    """The values every component is configured with: the PLMN, its realm and the tracking area."""
    realm: str
    mcc: str
    mnc: str
    tac: int


class InstallPlan(NamedTuple):
    """Validated inputs of the install step."""
    repository: str
    ref: str
    timeout: int
    pins: List[Tuple[str, str]]  # (submodule path, commit): the component's pins, default source only
    extra: List[str]  # the component's own arguments (``install_args``)


class StepResults(NamedTuple):
    """What a component step reported (``step_results``)."""
    results: Dict[str, str]  # RESULT key value
    notes: List[str]
    progress: str  # the last PROGRESS line, "" without one


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def b64_json(spec: Mapping[str, object]) -> str:
    return b64(json.dumps(spec, sort_keys=True))


def shipped_b64(name: str) -> str:
    """A shipped helper program (e.g. ``oai/render.py``) as base64, for ``install_helper``."""
    return b64(vnfscript.load(name))


# --------------------------------------------------------------------------- components
class Component(Generic[V]):
    """What a component charm contributes. Subclasses fill the class attributes and hooks; ``V``
    is the type of their validated configuration values (``config_values``)."""

    name = ""  # hss, mme, spgwc, spgwu, enb
    title = ""  # HSS, MME, ...
    repository = ""  # pinned default source
    ref = ""
    program = ""  # file name of the built program
    #: Folders of the OAI source tree whose code defines the program's command-line options (the
    #: conformance check reads the options there).
    option_sources: Tuple[str, ...] = ()
    workdir = ""  # where the program starts; empty: the directory of the built program
    env: Dict[str, str] = {}
    #: Debian packages the charm's own steps need on the VNF (cloud-init normally has them).
    prerequisites: Tuple[str, ...] = ("git", "python3", "python3-yaml", "psmisc")
    #: (submodule path, commit, why): the commits OAI's build helpers end up with where they
    #: `git pull origin master` after checking out the ref's submodules; oai-install rewrites each
    #: pull into a checkout of these (vnf/oai/pin-submodules.sh). Used with the pinned default
    #: repository and ref only: another ref builds at the commits it records itself.
    submodule_pins: Tuple[Tuple[str, str, str], ...] = ()
    #: False: oai-install fetches no submodule (``oai_prepare_<name>`` in vnf/oai/install.sh says
    #: so on the VNF): the component builds none of them.
    fetch_submodules = True
    #: The Ubuntu release of the component's VNF image (its VNFD's sw-image-desc).
    ubuntu = "18.04"
    #: False: the build steps run no OAI build script (nothing for the conformance's flag check).
    oai_build_script = True

    @property
    def service(self) -> str:
        return "oai-" + self.name

    @property
    def source_dir(self) -> str:
        return "{}/{}".format(SOURCE_ROOT, self.name)

    @property
    def binary(self) -> str:
        """Stable path of the program: a link made by oai-install to what the build produced."""
        return "{}/bin/{}".format(SOURCE_ROOT, self.program)

    def binary_candidates(self) -> List[str]:
        """Where the build may have put the program, most likely first."""
        raise NotImplementedError

    @property
    def built_marker(self) -> str:
        return "{}/{}.built".format(STATE_DIR, self.name)

    @property
    def configured_marker(self) -> str:
        return "{}/{}.configured".format(STATE_DIR, self.name)

    # -- to be provided by the component
    #: Labels of the build steps, in order; the steps themselves are ``oai_build_<name>`` in
    #: vnf/oai/install.sh (one ``build_step`` call per label).
    build_labels: Tuple[str, ...] = ()
    #: Folders, relative to ``workdir``, that the component's configuration names (log files...).
    work_dirs: Tuple[str, ...] = ()

    def config_values(self, config: Options, plan: Optional[model.Plan]) -> V:
        """Validated values for configure (raises InvalidValue); their field ``addresses`` is
        ``self.addresses(config, plan)``."""
        raise NotImplementedError

    def addresses(self, config: Options, plan: Optional[model.Plan]) -> Addresses:
        """Its own and its peers' service addresses by reference point, from the registry."""
        return oai_addresses.of(self.name, self.title, config, plan)

    def addresses_of(self, values: V) -> Addresses:
        """The ``addresses`` field of its values (``config_values``)."""
        found = getattr(values, "addresses", None)
        if not isinstance(found, oai_addresses.Addresses):
            raise TypeError("the values of {} carry no Addresses".format(self.name))
        return found

    def render_spec(self, values: V) -> RenderSpec:
        """The renderer's spec: {"files": [...]} (see vnf/oai/render.py)."""
        raise NotImplementedError

    def configure_calls(self, step: vnfscript.Step, values: V) -> None:
        """Add the component's configure calls (functions of vnf/oai/configure*.sh) to ``step``."""
        raise NotImplementedError

    def configure_files(self) -> List[str]:
        """The shipped files the configure step needs besides oai-lib.sh and configure.sh."""
        return []

    def run_argv(self, values: V) -> List[str]:
        """The service's command line (list)."""
        raise NotImplementedError

    def install_args(self, config: Options) -> List[str]:
        """Validated extra arguments of the install step, for ``oai_prepare_<name>`` in install.sh."""
        return []

    def configure_timeout(self, values: V) -> int:
        """Seconds the configure step may take."""
        return CONFIGURE_TIMEOUT

    def setup_settings(self, values: V) -> List[Tuple[str, str]]:
        """[(key, value)] for ``oai-service setup``/``prestart`` (vnf/oai/service.sh): ``host`` (ip
        names...), ``loaddr`` (address label), ``nat`` (pool [sgi]), ``cql`` (ip seconds), ``dir`` (path owner)."""
        return []

    def before_units(self) -> List[str]:
        """systemd units the service starts after (besides the tunnels)."""
        return []

    def secrets(self, values: V) -> List[str]:
        """The values that are secrets (they may travel in the step's data section only)."""
        return []


# --------------------------------------------------------------------------- values
def common_values(config: Options) -> Common:
    mcc = oai_validation.digits(config.get("mcc"), "mcc", 3, 3)
    mnc = oai_validation.digits(config.get("mnc"), "mnc", 2, 3)
    return Common(
        realm=oai_validation.realm(config.get("realm")),
        mcc=mcc,
        mnc=mnc,
        tac=oai_validation.integer(config.get("tac"), "tac", 1, 65533),
    )


def source(component: Component[V], config: Options) -> Tuple[str, str]:
    """(repository, ref): the charm's pinned default unless overridden in config."""
    repo = (config.get("oai-repository") or "").strip() or component.repository
    ref = (config.get("oai-ref") or "").strip() or component.ref
    return oai_validation.repository(repo), oai_validation.git_ref(ref)


def opc(k_hex: str, op_hex: str) -> str:
    """OPc from K and OP (hex strings): AES-128_K(OP) xor OP (3GPP TS 35.206), as the HSS derives it."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    k, op = bytes.fromhex(k_hex), bytes.fromhex(op_hex)
    encryptor = Cipher(algorithms.AES(k), modes.ECB()).encryptor()
    enc = encryptor.update(op) + encryptor.finalize()
    return bytes(a ^ b for a, b in zip(enc, op)).hex()


def set_edit(key: str, value: object, what: Optional[str] = None, quoted: bool = False,
             count: int = 1) -> JsonObject:
    """A libconfig edit: ``key = <anything>;`` becomes ``key = value;`` (exactly ``count`` times)."""
    rhs = '"{}"'.format(value) if quoted else str(value)
    return {"pattern": r"\b{}(\s*)=\s*[^;\n]*;".format(key), "repl": r"{}\g<1>= {};".format(key, rhs),
            "count": count, "what": what or key}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced; for anything that leaves the charm."""
    out = text or ""
    for s in secrets:
        if s:
            for form in (s, s.lower(), s.upper()):
                out = out.replace(form, "***")
    return out


def values_secrets(component: Component[V], values: V) -> List[str]:
    return [s for s in component.secrets(values) if s]


# --------------------------------------------------------------------------- install
def install_timeout(config: Options) -> int:
    return oai_validation.integer(config.get("oai-install-timeout", 7200), "oai-install-timeout", 300, 86400)


def install_plan(component: Component[V], config: Options) -> InstallPlan:
    """Validated install inputs."""
    repo, ref = source(component, config)
    default = (repo, ref) == (component.repository, component.ref)
    return InstallPlan(repository=repo, ref=ref, timeout=install_timeout(config),
                       pins=[(p, c) for p, c, _ in component.submodule_pins] if default else [],
                       extra=component.install_args(config))


def install_step(component: Component[V], inputs: InstallPlan) -> vnfscript.Step:
    """The install step: runs detached on the VNF (vnf/oai/install.sh) and is followed here."""
    return vnfscript.Step([LIB, "oai/install.sh"]).call(
        "oai_install",
        component.name,
        component.title,
        inputs.repository,
        inputs.ref,
        inputs.timeout,
        len(component.build_labels),
        " ".join(component.prerequisites),
        " ".join(component.binary_candidates()),
        component.binary,
        component.source_dir,
        " ".join("{}={}".format(path, commit) for path, commit in inputs.pins),
        shipped_b64("oai/pin-submodules.sh"),
        *inputs.extra
    )


# --------------------------------------------------------------------------- configure
def address_args(addresses: Addresses) -> List[str]:
    """The arguments of ``oai_configure_addresses`` (vnf/oai/configure.sh): each reference point
    the component is an end of, then its own service address on it, in the registry's order. The
    VNF-side check thus follows the registry (``oai.addresses``): no component's call names them."""
    return [arg for rp in addresses.own for arg in (rp, addresses.ip(rp))]


def configure_step(component: Component[V], values: V) -> vnfscript.Step:
    """Render and apply the configuration; requires a completed install."""
    step = vnfscript.Step([LIB, "oai/configure.sh"] + component.configure_files())
    step.call(
        "oai_configure_begin",
        component.name,
        shipped_b64("oai/render.py"),
        shipped_b64("oai/service.sh"),
        b64(service_settings(component, values)),
        PREFIX,
    )
    # Before anything of the VNF's setup changes: a missing address changes nothing but the helpers.
    step.call("oai_configure_addresses", component.title, *address_args(component.addresses_of(values)))
    if component.work_dirs:
        step.call("oai_configure_dirs", *[component.workdir + "/" + d for d in component.work_dirs])
    step.call("oai_configure_setup", component.name)
    component.configure_calls(step, values)
    step.call("oai_configure_end", component.name, component.service, component.binary)
    program = step.program()
    code = program.rpartition("\n" + vnfscript.DATA_MARKER + "\n")[0] if step.secrets else program
    for s in values_secrets(component, values):  # defence in depth: secrets only in the data section
        if s and (s in code or any(s in a for a in step.args)):
            raise InvalidValue("internal error: a secret would be sent in clear text; nothing was sent")
    return step


def step_results(report: vnfscript.Report) -> StepResults:
    """The results, notes and last progress of a parsed report."""
    results = {}
    for rest in report.of("RESULT"):
        key, _, value = rest.partition(" ")
        results[key] = value.strip()
    progress = report.of("PROGRESS")
    return StepResults(results=results, notes=[n.strip() for n in report.of("NOTE")],
                       progress=progress[-1].strip() if progress else "")


def service_settings(component: Component[V], values: V) -> str:
    """The data file ``<prefix>/oai-<c>.service`` that ``oai-service`` reads (never executed)."""
    lines = [("workdir", component.workdir), ("binary", component.binary)]
    lines += [("arg", a) for a in component.run_argv(values)[1:]]
    lines += [("env", "{}={}".format(k, v)) for k, v in sorted(component.env.items())]
    lines += component.setup_settings(values)
    return settings_text(lines)


def tunnel_settings(devices: Iterable[str], limit: int) -> str:
    """``<state>/<c>.tunnels``: what ``oai-service prestart`` waits for."""
    return settings_text([("limit", str(int(limit)))] + [("dev", d) for d in devices])


def settings_text(lines: List[Tuple[str, str]]) -> str:
    for key, value in lines:
        if "\n" in value or "\r" in value:
            raise InvalidValue("internal error: a setting with a line break ({})".format(key))
    return "# Managed by the VPNaaS charm: data for oai-service.\n" + "".join(
        "{} {}\n".format(k, v) for k, v in lines)


# --------------------------------------------------------------------------- the systemd unit
def render_unit(component: Component[V], devices: List[str]) -> str:
    after = ["network-online.target"] + ["wg-quick@{}.service".format(d) for d in devices] + component.before_units()
    return "\n".join([
        "# Managed by the VPNaaS charm.", "[Unit]", "Description=OpenAirInterface {} (VPNaaS bundle)".format(
            component.title), "Wants=network-online.target", "After={}".format(" ".join(after)), "",
        "[Service]", "Type=simple", "ExecStartPre={}/oai-service prestart {}".format(SBIN, component.name),
        "ExecStart={}/oai-{}-run".format(SBIN, component.name), "Restart=on-failure", "RestartSec=10",
        "TimeoutStartSec=infinity", "", "[Install]", "WantedBy=multi-user.target", ""])


# --------------------------------------------------------------------------- start gate
def add_gate(step: vnfscript.Step, component: Component[V], devices: List[str], wanted: str,
             prestart_limit: int, wait: int = GATE_HANDSHAKE_WAIT) -> vnfscript.Step:
    """The component part of every reconcile (vnf/oai/gate.sh, see ``remote.tunnel_step``).

    Reports what is installed/configured/running. With ``wanted == "started"`` it starts the
    service only when ``has_handshake`` holds for every tunnel device of the plan (waiting at most
    GATE_HANDSHAKE_WAIT s for a handshake in progress); otherwise it reports the devices still
    without one, and a later reconcile (relation-changed, update-status) starts it. With
    ``wanted == "stopped"`` it stops the service."""
    for name in (LIB, "oai/gate.sh"):
        if name not in step.files:
            step.files.append(name)
    step.call(
        "oai_gate",
        component.name,
        component.service,
        component.binary,
        wanted or "none",
        wait,
        shipped_b64("oai/service.sh"),
        b64(tunnel_settings(devices, prestart_limit)),
        b64(render_unit(component, devices)),
        *devices
    )
    return step


def add_teardown(step: vnfscript.Step, component: Component[V]) -> vnfscript.Step:
    """The component's part of the charm's removal: its service stops (and is disabled)."""
    if LIB not in step.files:
        step.files.append(LIB)
    return step.call("oai_stop", component.service, component.binary)


def progress_text(line: str) -> Optional[Tuple[str, str]]:
    """'PROGRESS 3/7 fetching MME x' -> ('3/7', 'fetching MME x'), or None."""
    kind, _, rest = line.partition(" ")
    if kind != "PROGRESS":
        return None
    step, _, text = rest.strip().partition(" ")
    return step, text


class Ue(NamedTuple):
    """The UE a component's VNF can run (the eNB's lte-uesoftmodem, the gNB's nr-uesoftmodem): the
    registry entry's ``ue`` names it, and ``oai_workload.UeWorkload`` runs its actions with it."""
    #: The options that hold the UE's keys K and OP (secrets; the OPc derived from them too).
    keys: Tuple[str, str]
    #: (result key, text): where the core logs the UE's attach (not read from this VNF).
    core_view: Tuple[str, str]
    #: The attach step from the charm's options (raises InvalidValue).
    attach: Callable[[Options], vnfscript.Step]
    #: The iperf3 step towards ``server`` for ``seconds``.
    iperf: Callable[[str, int], vnfscript.Step]
