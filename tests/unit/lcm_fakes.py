"""Recording stand-ins for the emulated LCM's unit tests (test_lcm_data, test_lcm_heal,
test_lcm_upgrade): a VIM and a VCA that record every call, and the bundle's real VNF specs (the
VNFDs and params the packages carry, through nsmodel as the testbed reads them)."""
import copy

from testbed.emulators import nsmodel

ENV = {"MGMT_NETWORK": "m", "LTE_K": "0" * 32, "LTE_OP": "1" * 32, "NR_K": "2" * 32, "NR_OP": "3" * 32,
       "MYSQL_PASSWORD": "abcdefghijklmnop", "VIM_ACCOUNT": "v", "VIM_ACCOUNT_SITE2": "v2"}


def specs(variant):
    """{member: VnfSpec} of the variant's (single) NS, with its real VNFDs."""
    (inst,) = nsmodel.load(variant, "/charms", ENV)
    return {s.name: s for s in inst.vnfs}


def spec(member, variant="eps_wg"):
    return copy.deepcopy(specs(variant)[member])


class Result(object):
    def __init__(self, status="completed", results=None, message=""):
        self.status, self.results, self.message = status, results or {}, message


class Machine(object):
    def __init__(self, name, ip, generation=0):
        self.name, self.mgmt_ip, self.generation = name, ip, generation


class Vim(object):
    def __init__(self, calls, names=()):
        self.calls = calls
        self.vnfs = {n: Machine(n, "198.18.0.{}".format(10 + i)) for i, n in enumerate(names)}
        self.keys = {}      # (name, generation) -> injected keys

    def rebuild_vnf(self, name):
        old = self.vnfs[name]
        self.calls.append(("rebuild", name))
        self.vnfs[name] = Machine(name, old.mgmt_ip, old.generation + 1)
        return self.vnfs[name]

    def authorize(self, machine, key):
        self.calls.append(("inject", machine.name, machine.generation, key))


class Vca(object):
    """The emulated model's API as LCM's steps use it; ``fail`` maps an action name to a
    failure message; ``errored`` lists units in a hook error."""

    def __init__(self, calls, apps=()):
        self.calls = calls
        self.apps = set(apps)
        self.config = {}
        self.fail = {}
        self.errored = set()
        self.statuses = {}

    def units(self, app=None):
        return ["{}/0".format(app)] if app in self.apps else []

    def run_action(self, unit, name, params, wait=True):
        self.calls.append(("action", unit, name))
        if name in self.fail:
            return Result("failed", message=self.fail[name])
        return Result(results={"pubkey": "ssh-ed25519 AAAA{}".format(unit)} if name == "get-ssh-public-key" else {})

    def set_config(self, app, values, wait=True):
        self.calls.append(("config", app))
        self.config[app] = dict(values)

    def deploy(self, app, charm_dir, wait=True):
        self.calls.append(("deploy", app))

    def relate(self, provider, requirer, wait=True):
        self.calls.append(("relate", provider, requirer))

    def remove_application(self, app):
        self.calls.append(("remove-application", app))

    def upgrade_charm(self, app, charm_dir):
        self.calls.append(("upgrade-charm", app, charm_dir))

    def status(self, unit):
        return ("error", "hook failed") if unit in self.errored else ("active", "")

    def resolved(self, unit, retry=True):
        self.calls.append(("resolved", unit, retry))
        self.errored.discard(unit)

    def settle(self):
        pass
