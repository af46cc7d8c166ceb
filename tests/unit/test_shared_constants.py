"""Facts the charm's Python and the VNF-side shell both state, held equal: the marker of the
files the charm owns, its route protocol, its hook scripts and service device (wgconfig.py
renders them into wg-quick files, vnf/tunnels.sh acts on them)."""
import subprocess

from vpnaas.core import wgconfig
from vpnaas.vnf import vnfscript


def shell_value(name):
    program = vnfscript.load("tunnels.sh") + '\nprintf "%s" "${}"\n'.format(name)
    return subprocess.run(["bash", "-c", program], stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout


def test_the_python_and_the_vnf_side_name_the_same_things():
    assert shell_value("MARKER") == wgconfig.MARKER
    assert shell_value("VPNAAS_PROTO") == str(wgconfig.ROUTE_PROTOCOL)
    assert shell_value("ROUTES_HOOK") == wgconfig.ROUTES_HOOK
    assert shell_value("SERVICE_HOOK") == wgconfig.SERVICE_HOOK
    assert shell_value("SERVICE_DEVICE") == wgconfig.SERVICE_DEVICE


def test_the_relation_interface_is_specified_once():
    """relation_data.py's docstring table is the interface's one specification (held against its
    schema by tests/unit/test_tunnel_interface.py): no other module or README repeats it."""
    import os
    import re

    from vpnaas.charm import tunnel_relation
    from vpnaas.core import relation_data

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    row = re.compile(r"^\| `service-prefixes` +\|", re.M)
    assert row.search(relation_data.__doc__)
    assert not row.search(readme) and "charms/vpnaas/core/relation_data.py" in readme
    assert not row.search(tunnel_relation.__doc__)
