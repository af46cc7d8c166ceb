"""Rendering a variant's params template (params/<file>.yaml with ${VAR} references) into the
config file passed to `osm ns-create/nsi-create --config_file`.

The rendering itself is the bundle's (scripts/bundle/params.py, ``render(path, env, nst) -> dict``),
so the deploy, the validator and the testbed read templates the same way. The result holds the
LTE secrets, so it is written with mode 0600 and its content is never printed.
"""

import os

import yaml

RENDERED_DIR = os.path.join("build", "deploy")


class ParamsError(Exception):
    pass


def referenced_vars(path):
    """The ${VAR}s the template uses in its data (a ${VAR} in a comment is documentation)."""
    from bundle import params as bundle_params
    return bundle_params.variables(bundle_params.load(path))


def _members(catalog, variant, nst):
    """Whom the config's additionalParamsForVnf must reach: {None or subnet id: [member-vnf-index]}."""
    def of(nsd_id):
        return [p["id"] for p in catalog.nsd(nsd_id)["df"][0]["vnf-profile"]]

    if nst is None:
        return {None: of(variant.descriptor_ids[0])}
    return {s["id"]: of(s["nsd-ref"]) for s in nst.get("netslice-subnet") or []}


def _render(path, env, nst=None, members=None):
    try:
        from bundle import params as bundle_params
    except ImportError as exc:
        raise ParamsError("scripts/bundle/params.py (render) is not available: {}".format(exc)) from None
    try:
        return bundle_params.render(path, env, nst=nst, members=members)
    except bundle_params.ParamsError as exc:
        raise ParamsError(str(exc)) from None


def render_variant(cfg, runner, catalog, variant, index=0):
    """Render the params of ``variant`` (the ``index``-th for an NSI list) to
    build/deploy/<variant>[.<index>].params.yaml; return (relative path, rendered dict)."""
    template_rel = variant.params_for(index)
    template = catalog.abspath(template_rel)
    if not os.path.isfile(template):
        raise ParamsError("params file {} of variant {} does not exist".format(template_rel, variant.name))
    env = cfg.render_env()
    missing = [v for v in referenced_vars(template) if not env.get(v)]
    if missing:
        if not runner.dry_run:
            raise ParamsError(
                "{} needs {} (set in the environment or deploy.env)".format(template_rel, ", ".join(missing))
            )
        # A dry run shows the commands without real secrets; the file is still written so that
        # the --config_file path it prints exists and the template is proven to render.
        runner.say("    warning (dry run): {} unset; rendered with placeholders".format(", ".join(missing)))
        for var in missing:
            env[var] = "DRY-RUN-{}".format(var)
    # nsi-create: the config carries the 5QI of the NST it is for (bundle.params.with_slice_5qi).
    nst = catalog.nst_doc(variant.descriptor_ids[index]) if variant.kind == "nsi" else None
    data = _render(template, env, nst, _members(catalog, variant, nst))
    several = len(variant.params) > 1 or (variant.kind == "nsi" and len(variant.descriptor_ids) > 1)
    suffix = ".{}".format(index) if several else ""
    rel = os.path.join(RENDERED_DIR, "{}{}.params.yaml".format(variant.name, suffix))
    path = catalog.abspath(rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Created 0600 from the start (not chmod after writing), so the secrets are never world-readable.
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(data, f, default_flow_style=False, sort_keys=False)
    os.chmod(path + ".tmp", 0o600)
    os.replace(path + ".tmp", path)
    runner.say("    params {} -> {} (mode 0600)".format(template_rel, rel))
    return rel, data


def vim_accounts_in(data):
    """Every VIM account an ns-create/nsi-create config places VNFs on (multi-site mapping)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("vim_account", "vimAccountId") and isinstance(value, str) and value not in found:
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return found
