"""The fake VNF keeps to the shipped step: it answers only calls the step defines, and only the
program the charm ships."""
import subprocess

from fake_vnf import STEP_CALLS, FakeVnf

from vpnaas.core import model
from vpnaas.vnf import remote, vnfscript


def test_every_call_the_fake_answers_is_a_function_of_the_shipped_step():
    program = vnfscript.load(vnfscript.LIBRARY) + "\n" + vnfscript.load("tunnels.sh") + "\n"
    program += vnfscript.load("metrics.sh") + "\ndeclare -F\n"
    listed = subprocess.run(["bash", "-c", program], stdout=subprocess.PIPE, check=True, universal_newlines=True)
    defined = {line.split()[-1] for line in listed.stdout.splitlines()}
    assert set(STEP_CALLS) <= defined


def test_the_fake_refuses_a_program_that_is_not_the_shipped_one():
    vnf = FakeVnf()
    step = remote.tunnel_step(model.Plan())
    rc, out, _err = vnf.execute(step.command("root"), step.program().replace("FACT", "FAKT").encode(), "root")
    assert rc != 0 and "DONE" not in out and vnf.unexpected
    vnf.unexpected.clear()
    rc, out, _err = vnf.execute(step.command("root"), step.program().encode(), "root")
    assert rc == 0 and remote.parse_report(out).facts.client == vnf.client_address and not vnf.unexpected
