"""Instantiation-parameter templates (params/*.yaml) and their rendering.

The files in params/ are ns-create / nsi-create config files in which secrets and site-specific
names are ``${VAR}`` references, so that LTE keys never enter the repository. ``render`` fills
them from an environment. Substitution happens on the parsed YAML, not on the text, so a value
cannot inject YAML structure.
"""

import argparse
import copy
import os
import re
import sys

import yaml

from bundle import ROOT
from bundle.yamlfile import load_mapping
from vpnaas.core import qos, registry

VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ParamsError(Exception):
    pass


def load(path):
    """Parse a params template without substituting anything."""
    return load_mapping(path if os.path.isabs(path) else os.path.join(ROOT, path), path, ParamsError)


def variables(data):
    """Every ${VAR} name used anywhere in ``data`` (keys included), sorted."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            found.update(VAR_RE.findall(node))

    walk(data)
    return sorted(found)


def substitute(data, env, where="params"):
    """Return a copy of ``data`` with every ${VAR} replaced from ``env``."""
    missing = [v for v in variables(data) if v not in env]
    if missing:
        raise ParamsError("{}: environment variable(s) not set: {}".format(where, ", ".join(missing)))

    def sub(text):
        return VAR_RE.sub(lambda m: str(env[m.group(1)]), text)

    def walk(node):
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            return sub(node)
        return node

    return walk(data)


def render(path, env=None, nst=None, members=None):
    """Load params template ``path``, substitute ${VAR} from ``env`` (default os.environ) and add
    the slice's 5QI and the service addresses the file does not name (``with_slice_5qi``): 0 to an
    ns-create config, the 5QI of ``nst`` (an NST body) to an nsi-create config (``members``: as
    with_slice_5qi takes them). An nsi-create
    template without ``nst`` is returned without it:
    it serves every NST over the same NSD, and OSM refuses it until the NST's 5QI is added.

    Raises ParamsError naming the file and every missing variable; nothing is written.
    """
    if env is None:
        env = os.environ
    data = substitute(load(path), env, where=path)
    if nst is None and is_nsi(data):
        return data
    return with_slice_5qi(data, nst, where=path, members=members)


# --- the slice's 5QI: written once, in the NST; every params file gets it from there ----------

#: The additionalParams key the VNFDs' `config` primitive reads (<slice_5qi> -> charm option slice-5qi).
SLICE_KEY = "slice_5qi"
#: What an NS outside any slice gets: the charm's "not marked".
NOT_A_SLICE = 0
#: The standardized 5QI values (3GPP TS 23.501 table 5.7.4-1): the charm's own table, so that an
#: NST is refused here exactly when no charm would accept its 5QI.
STANDARDIZED_5QI = frozenset(qos.FIVEQI)


def is_nsi(data):
    """True for an nsi-create config (NBI's nsi_instantiate form: netslice-subnet items)."""
    return isinstance(data, dict) and "netslice-subnet" in data


def nst_5qi(nst, where="nst"):
    """The 5QI an NST body declares (quality-of-service.id), refused unless it is a standardized one."""
    qos = nst.get("quality-of-service") if isinstance(nst, dict) else None
    value = qos.get("id") if isinstance(qos, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value not in STANDARDIZED_5QI:
        raise ParamsError("{}: quality-of-service.id {!r} is not a standardized 5QI (3GPP TS 23.501 "
                          "table 5.7.4-1: {})".format(where, value, ", ".join(map(str, sorted(STANDARDIZED_5QI)))))
    return value


def _members(container, members, where):
    """The additionalParams mappings of ``container``'s additionalParamsForVnf list, with an item
    made for every member of ``members`` that has none (a member whose other parameters OSM fills)."""
    items = container.get("additionalParamsForVnf")
    if items is None:
        items = container["additionalParamsForVnf"] = []
    if not isinstance(items, list):
        raise ParamsError("{}: additionalParamsForVnf is not a list".format(where))
    given = {item.get("member-vnf-index") for item in items if isinstance(item, dict)}
    items += [{"member-vnf-index": m, "additionalParams": {}} for m in members or () if m not in given]
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ParamsError("{}: an additionalParamsForVnf item is not a mapping".format(where))
        params = item.setdefault("additionalParams", {})
        if params is None:
            params = item["additionalParams"] = {}
        if SLICE_KEY in params:
            raise ParamsError("{}: member {}: {} is derived from the NST's quality-of-service; do not write "
                              "it in a params file".format(where, item.get("member-vnf-index"), SLICE_KEY))
        with_service_addresses(item.get("member-vnf-index"), params)
        out.append(params)
    return out


# --- the members' service addresses: the IP plan's where it names them, else the registry's -------

def service_address_defaults(member):
    """{``<rp>_service_addresses``: address} for every reference point the registry makes the
    component ``member`` an end of (a member's vnf-profile id is its component's name:
    bundle.membership), its default in that reference point's service network
    (registry.ReferencePoint.default_service_address); {} for a member that is no component."""
    reg = registry.load()
    if not isinstance(member, str) or member not in reg.components:
        return {}
    return {"{}_service_addresses".format(rp): addr for rp, addr in reg.default_service_addresses(member).items()}


def with_service_addresses(member, params):
    """Give ``params`` (one member's additionalParams) each service address its VNFD's `config`
    primitive asks for (descriptors.add_service_addresses: one per reference point of the
    component) that the params file does not name: a reference point is its registry entry, never
    a params line. What the file names wins (the IP plan of docs/bundle.md)."""
    for key, addr in service_address_defaults(member).items():
        if params.get(key) in (None, ""):
            params[key] = addr
    return params


def with_slice_5qi(data, nst=None, where="params", members=None):
    """A copy of a rendered or template config with ``slice_5qi`` in every member's additionalParams
    (and the service addresses the file does not name: ``with_service_addresses``):
    ns-create (``nst`` None): 0; nsi-create: the NST's 5QI, in each netslice-subnet item that is
    one of the NST's subnets. ``members`` ({None or subnet id: [member-vnf-index]}, from the NSDs:
    descriptors.members_of) adds an item for a member the file has none for. A params file that
    spells slice_5qi itself is refused (one source)."""
    out = copy.deepcopy(data)
    members = members or {}
    if not is_nsi(out):
        if nst is not None:
            raise ParamsError("{}: an ns-create config belongs to no NST".format(where))
        for params in _members(out, members.get(None), where):
            params[SLICE_KEY] = NOT_A_SLICE
        return out
    if nst is None:
        raise ParamsError("{}: an nsi-create config needs the NST whose 5QI it carries".format(where))
    value = nst_5qi(nst, where="nst {}".format(nst.get("id")))
    subnets = [s.get("id") for s in nst.get("netslice-subnet") or [] if isinstance(s, dict)]
    items = out.get("netslice-subnet")
    if items is None:
        items = out["netslice-subnet"] = []
    given = {sub.get("id") for sub in items if isinstance(sub, dict)}
    items += [{"id": sid} for sid in subnets if sid in members and sid not in given]
    for sub in items:
        if isinstance(sub, dict) and sub.get("id") in subnets:
            for params in _members(sub, members.get(sub["id"]), where):
                params[SLICE_KEY] = value
    return out


def dummy_env(data):
    """Plausible values for every variable, for validating templates without real secrets."""
    env = {}
    for name in variables(data):
        if name in ("LTE_K", "LTE_OP"):
            env[name] = "0" * 32
        else:
            env[name] = "dummy-" + name.lower().replace("_", "-")
    return env


def main(argv=None):
    """``python3 -m bundle.params PARAMS [--nst NST_FILE]``: the rendered config on stdout."""
    ap = argparse.ArgumentParser(prog="python3 -m bundle.params", description=main.__doc__)
    ap.add_argument("params", help="a params template (params/*.yaml)")
    ap.add_argument("--nst", help="the NST file the nsi-create is for (build/packages/<id>_nst.yaml)")
    args = ap.parse_args(argv)
    try:
        nst = None
        if args.nst:
            nst = load_mapping(args.nst, args.nst, ParamsError)["nst"][0]
        data = render(args.params, nst=nst)
        if nst is None and is_nsi(data):
            raise ParamsError("{}: an nsi-create config needs --nst (the slice's 5QI comes from it)".format(
                args.params))
    except (ParamsError, KeyError, IndexError, TypeError) as e:
        print("params: {}".format(e), file=sys.stderr)
        return 1
    yaml.safe_dump(data, sys.stdout, default_flow_style=False, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
