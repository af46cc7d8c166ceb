"""Facts the charm's Python and the VNF-side shell both state, held equal: the marker of the
files the charm owns, its route protocol, its hook scripts and service device (wgconfig.py
renders them into wg-quick files, vnf/tunnels.sh acts on them)."""
import subprocess

from vpnaas import vnfscript, wgconfig


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
