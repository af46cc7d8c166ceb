"""The bounded-cost check of the grammar (run by tests/unit/test_grammar_cost.py in a subprocess of
the interpreter under test, so on the newest Python and on Python 3.6 alike).

Every entry point where a value from outside reaches our grammar (``ENTRY_POINTS``: the validators,
the option parsers, the relation data codec, the add-peer parameters, the VNF's report and facts,
OSM's <OSM>, the hook environment) meets every worst case of ``GENERATORS`` -- alias bombs, deep
nesting, huge numbers, long lines, NULs, non-ASCII, runs of separators, quotes and escapes, report
lines -- at the sizes that matter (the grammar's own limits and 1 MiB), and a hundred or so random
strings of a fixed seed. For each call it records the outcome (refused with the grammar's own
exception, accepted, or anything else), the time (without tracing) and the peak of memory
allocated during the call (tracemalloc). The process limits its address space and every call's
time, so that a regression is reported, never a machine that swaps or a suite that hangs.

Prints one JSON document: {"python": ..., "results": [[entry, generator, outcome, seconds, bytes,
detail], ...]}.
"""
import json
import os
import random
import resource
import signal
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "charms")]

from vpnaas.charm import hookgate  # noqa: E402
from vpnaas.core import config as charm_config  # noqa: E402
from vpnaas.core import instance, model, relation_data, validation  # noqa: E402
from vpnaas.core import plan as planning  # noqa: E402
from vpnaas.core.facts import Facts  # noqa: E402
from vpnaas.oai import ue_report  # noqa: E402
from vpnaas.oai import validation as oai_validation  # noqa: E402
from vpnaas.oai.cn5g import common as cn5g_common  # noqa: E402
from vpnaas.vnf import remote  # noqa: E402

MiB = 1 << 20
#: The sizes at which every text generator runs: a value's length limit (validation.MAX_VALUE_LEN),
#: just under the length limit of OSM's <OSM> (read whole below it), and 1 MiB.
SIZES = (validation.MAX_VALUE_LEN, instance.MAX_TEXT, MiB)
CALL_LIMIT = 20          # CPU-s: a call that used this much CPU is reported as "timeout"
HANG_LIMIT = 600         # s of wall clock: a call that sleeps or blocks this long is reported as "timeout"
RANDOM = 120             # random strings (tests/unit/test_osm_params.py fuzzes the <OSM> reader further)
ADDRESS_SPACE = 2 << 30  # bytes: what this process may map at all
KEY = "azyyD5rPNkvOsuPWj4SCDlqUDUSnTgq8EaHEHOOuukM="


class Timeout(Exception):
    pass


# --------------------------------------------------------------------------- worst cases
def _fill(unit, n, head="", tail=""):
    body = n - len(head) - len(tail)
    return head + (unit * (body // len(unit) + 1))[:max(0, body)] + tail


def _alias_bomb(n):
    """The 413-byte bomb of issue 36 (nine levels of nine aliases as count_index), repeated."""
    lines = ["{a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    for i in range(1, 9):
        prev = "a" if i == 1 else "b{}".format(i - 1)
        lines.append(", b{0}: &b{0} [{1}]".format(i, ",".join(["*" + prev] * 9)))
    bomb = "".join(lines) + ", count_index: *b8}"
    return bomb if n <= len(bomb) else _fill("\n" + bomb, n, head=bomb)


TEXT = {
    "alias bomb": _alias_bomb,
    "deep brackets": lambda n: _fill("[", n),
    "deep mappings": lambda n: _fill("{a: ", n),
    "deep count_index": lambda n: _fill("[", n, head="{count_index: "),
    "digits": lambda n: _fill("9", n),
    "count_index digits": lambda n: _fill("9", n, head="{count_index: ", tail="}"),
    "long word": lambda n: _fill("a", n),
    "NULs": lambda n: _fill("\0", n),
    "non-ASCII digits": lambda n: _fill("\u0661", n),
    "line separators": lambda n: _fill("\u2028", n),
    "commas": lambda n: _fill(",", n),
    "prefix items": lambda n: _fill("10.0.0.1/32,", n),
    "key items": lambda n: _fill(KEY + ",", n),
    "spaces then a word": lambda n: _fill(" ", n, tail="x"),
    "line breaks": lambda n: _fill("\n", n),
    "CRLF": lambda n: _fill("\r\n", n),
    "single quotes": lambda n: _fill("'", n),
    "open single quote": lambda n: _fill("''", n, head="{a: '"),
    "double quotes and escapes": lambda n: _fill('\\"', n, head='{a: "'),
    "escaped line breaks": lambda n: _fill("\\\n  ", n, head='{a: "', tail='"}'),
    "folded quoted spaces": lambda n: _fill("  a", n, head="{a: '", tail="\n'}"),
    "many keys": lambda n: _fill("k: 1, ", n, head="{"),
    "many distinct keys": lambda n: _distinct_keys(n),
    "OSM's <OSM> of many instances": lambda n: _osm_like(n),
    "many items": lambda n: _fill("1, ", n, head="{count_index: 1, v: ["),
    "plain words": lambda n: _fill(" a", n, head="{a: a"),
    "colons": lambda n: _fill(":", n),
    "IPv6 groups": lambda n: _fill("1:", n),
    "scope id": lambda n: _fill("x", n, head="fe80::1%"),
    "host:port": lambda n: _fill("a.", n, tail="a:51820"),
    "key-shaped": lambda n: _fill(KEY, n),
    "tabs": lambda n: _fill("\t", n),
    "shell": lambda n: _fill("$(id);`id`|", n),
}

def _distinct_keys(n):
    """A well-formed mapping of as many distinct keys as fit (the reader's dictionary at its largest)."""
    items, size, i = [], 2, 0
    while True:
        item = "k{}: 1".format(i)
        if size + len(item) + 2 > n:
            return "{" + ", ".join(items) + "}"
        items.append(item)
        size += len(item) + 2
        i += 1


def _osm_like(n):
    """LCM's shape (nested mappings, quoted MACs, wrapped lines) with as many VDU instances as fit."""
    head, tail, vdus = "{count_index: 1, ip_address: 10.0.0.5, vdu: {", "}, vdu_id: v}", []
    size, k = len(head) + len(tail), 0
    while True:
        vdu = ("v-{0}: {{count_index: {0}, interfaces: {{eth0: {{ip_address: 10.0.{1}.{2}, mac_address: "
               "'fa:16:3e:00:00:{3:02x}',\n    name: eth0}}}}, vdu_id: v}}").format(k, k // 250, k % 250, k % 256)
        if size + len(vdu) + 2 > n:
            return head + ", ".join(vdus) + tail
        vdus.append(vdu)
        size += len(vdu) + 2
        k += 1


#: Values of other types that reach a parser only where Juju or a hook tool hands one over
#: (an int option, an action parameter typed integer, a JSON value): every validator gets them.
OBJECTS = {
    "huge int": lambda: 1 << (8 * MiB),
    "huge negative int": lambda: -(1 << (8 * MiB)),
    "int64 max": lambda: (1 << 63) - 1,
    "float inf": lambda: float("inf"),
    "float nan": lambda: float("nan"),
    "long list": lambda: [0] * (MiB // 8),
    "deep list": lambda: _deep_list(200000),
    "big dict": lambda: {str(i): i for i in range(MiB // 32)},
    "bytes": lambda: b"x" * MiB,
    "None": lambda: None,
    "True": lambda: True,
}


def _deep_list(depth):
    out = []
    for _ in range(depth):
        out = [out]
    return out


def _random_texts(count, seed=36):
    """Short strings over the characters that matter to some grammar."""
    rng = random.Random(seed)
    alphabet = list("{}[],:'\"\\ \n\t&*!#%-?|>@`./=+0123456789abcfAF") + ["\0", "\u0661", "\r", "count_index: ",
                                                                             "10.0.0.1", "::", "/32", KEY]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(count)]


# --------------------------------------------------------------------------- entry points
def _v(fn, *args):
    return lambda value: fn(value, *args)


GRAMMAR = (validation.InvalidValue,)
VALIDATORS = {
    "validation.word": _v(validation.word, "w"),
    "validation.integer": _v(validation.integer, "i", 0, 65535),
    "validation.port": validation.port,
    "validation.public_key": validation.public_key,
    "validation.public_key_list": validation.public_key_list,
    "validation.protocol_version": validation.protocol_version,
    "validation.ip_address": validation.ip_address,
    "validation.interface_address": validation.interface_address,
    "validation.prefix": validation.prefix,
    "validation.prefix_list": validation.prefix_list,
    "validation.service_address_list": validation.service_address_list,
    "validation.host": validation.host,
    "validation.endpoint": validation.endpoint,
    "validation.endpoint_name": validation.endpoint_name,
    "validation.unit_name": validation.unit_name,
    "validation.implementation": validation.implementation,
    "validation.ssh_hostname": validation.ssh_hostname,
    "validation.login_name": validation.login_name,
    "oai_validation.realm": oai_validation.realm,
    "oai_validation.digits": _v(oai_validation.digits, "d", 3, 15),
    "oai_validation.secret_hex32": _v(oai_validation.secret_hex32, "k"),
    "oai_validation.repository": oai_validation.repository,
    "oai_validation.apt_series": _v(oai_validation.apt_series, "s"),
    "oai_validation.https_url": _v(oai_validation.https_url, "u"),
    "oai_validation.git_ref": oai_validation.git_ref,
    "oai_validation.ipv4": _v(oai_validation.ipv4, "a"),
    "oai_validation.ipv4_pool": _v(oai_validation.ipv4_pool, "p"),
    "oai_validation.interface_name": _v(oai_validation.interface_name, "i"),
    "oai_validation.secret_password": _v(oai_validation.secret_password, "p"),
    "oai_validation.hex_digits": _v(oai_validation.hex_digits, "h", 6),
    "oai_validation.db_name": _v(oai_validation.db_name, "n"),
    "cn5g_common.dnn": cn5g_common.dnn,
    "cn5g_common.ambr": _v(cn5g_common.ambr, "a"),
    "instance.index (osm-instance)": lambda v: instance.index({"osm-instance": v}),
}

CONFIG = {"ssh-hostname": "198.18.0.2", "tunnel-mtu": 1420, "persistent-keepalive": 25, "s6a-listen-port": 51821,
          "s6a-service-addresses": "172.16.6.2/32", "s6a-endpoint-address": "192.168.8.2"}
OPTIONS = ["ssh-hostname", "ssh-port", "ssh-username", "ssh-password", "ssh-connect-timeout", "tunnel-mtu",
           "persistent-keepalive", "metrics-port", "osm-instance", "slice-5qi", "slice-dscp-map",
           "slice-egress-mbit"] + [
    "s6a-" + o for o in ("listen-port", "tunnel-address", "endpoint-address", "service-addresses",
                         "service-network", "implementation", "peer-prefixes")]


def _option(name):
    def parse(value):
        config = dict(CONFIG, **{name: value})
        charm_config.parse(config)
        charm_config.parse_endpoint(config, "s6a", "provider", "198.18.0.2")
    return parse


BAG = dict(relation_data.encode(KEY, "192.168.8.129", 51821, validation.interface_address("10.250.1.2/30"), []),
           **{"rotation-protocol": "1", "next-key": KEY, "next-endpoint": "192.168.8.129:51921"})


def _field(name):
    return lambda value: relation_data.decode("hss/0", dict(BAG, **{name: value}))


def _mirror(name):
    bag = relation_data.mirror("hss/0", dict(BAG, generation="7"))
    return lambda value: relation_data.read_mirror({"hss/0"}, dict(bag, **{name: value}))


def _add_peer(name):
    params = {"device": "s6a", "public-key": KEY, "endpoint": "203.0.113.5:51820", "allowed-ips": "10.9.0.0/24"}
    return lambda value: planning.validate_manual_peer(dict(params, **{name: value}),
                                                       [model.TunnelEndpoint("s6a", "provider")])


def _report(kind):
    return lambda value: remote.parse_report("INIT none\n{} {}\nDONE\n".format(kind, value))


def _fact(kind):
    return lambda value: Facts.from_lines(["{} {}".format(kind, value), "addr 10.0.0.5/24"])


#: What a UE's actions report when all is well (vnf/oai/ue.sh's RESULT lines).
UE_ATTACH = {"imsi": "208950000000001", "ip": "12.1.1.2", "interface": "oaitun_ue1", "seconds": "12"}
UE_IPERF = {"ip": "12.1.1.2", "rtt-ms": "21.4",
            "iperf3": "eyJlbmQiOiB7InN1bV9zZW50IjogeyJiaXRzX3Blcl9zZWNvbmQiOiA5ODAwMDAwfX19"}


def _ue_result(reader, base, key):
    return lambda value: reader(dict(base, **{key: value}))


def _hook_environment(name):
    base = {"JUJU_DISPATCH_PATH": "hooks/s6a-relation-changed", "JUJU_RELATION_ID": "s6a:3",
            "JUJU_RELATION": "s6a", "JUJU_CHARM_DIR": "/nonexistent/vpnaas-cost", "JUJU_REMOTE_UNIT": "hss/0",
            "JUJU_UNIT_NAME": "mme/0"}
    return lambda value: hookgate.nothing_to_do(dict(base, **{name: value}))


#: name -> (callable, the exceptions that are its refusals, its domain: "any" value or "text" only)
ENTRY_POINTS = {name: (fn, GRAMMAR, "any") for name, fn in VALIDATORS.items()}
ENTRY_POINTS.update({"option " + o: (_option(o), GRAMMAR, "any") for o in OPTIONS})
ENTRY_POINTS.update({"relation field " + f: (_field(f), GRAMMAR + (relation_data.Incomplete,), "text")
                     for f in relation_data.PUBLISHED})
ENTRY_POINTS["relation field generation"] = (relation_data.parse_generation, GRAMMAR, "text")
# The application-data mirror: read through the same grammar; a refusal is no mirror (None).
ENTRY_POINTS.update({"mirror field " + f: (_mirror(f), (), "text") for f in relation_data.APP_FIELDS})
ENTRY_POINTS.update({"add-peer " + p: (_add_peer(p), GRAMMAR, "any")
                     for p in ("device", "public-key", "endpoint", "allowed-ips")})
ENTRY_POINTS.update({"report " + k: (_report(k), (remote.RemoteError,), "text")
                     for k in ("INIT", "IMPL", "DATAPLANE", "NEED", "PUBKEY", "FAILED", "METRICS", "QOS", "REFUSED",
                               "FACT", "FACTS", "UP", "DOWN", "COMPONENT", "HOST", "NOW", "PEER")})
ENTRY_POINTS.update({"fact " + k: (_fact(k), (), "text") for k in ("addr", "gateway", "client", "ipv6", "resolve")})
ENTRY_POINTS.update({"ue-attach result " + k: (_ue_result(ue_report.attach_results, UE_ATTACH, k), GRAMMAR, "text")
                     for k in UE_ATTACH})
ENTRY_POINTS.update({"ue-iperf result " + k: (_ue_result(ue_report.iperf_results, UE_IPERF, k), GRAMMAR, "text")
                     for k in UE_IPERF})
ENTRY_POINTS["facts state"] = (lambda v: Facts.from_dict({"addresses": v, "gateways": [v], "client": v,
                                                         "resolved": {"x": v}, "digest": v}), (), "any")
# JUJU_CHARM_DIR is Juju's own path, never checked by a grammar (docs/security.md: Juju is trusted).
ENTRY_POINTS.update({"hook environment " + k: (_hook_environment(k), (), "text")
                     for k in ("JUJU_DISPATCH_PATH", "JUJU_RELATION_ID", "JUJU_RELATION", "JUJU_REMOTE_UNIT",
                               "JUJU_UNIT_NAME", "JUJU_REMOTE_APP")})


def cases():
    """(generator name, make value) for every worst case, text first."""
    out = []
    for name, gen in sorted(TEXT.items()):
        for size in SIZES:
            out.append(("{} ({})".format(name, size), "text", lambda gen=gen, size=size: gen(size)))
    out.append(("issue 36 alias bomb (413 bytes)", "text", lambda: _alias_bomb(0)))
    for i, text in enumerate(_random_texts(RANDOM)):
        out.append(("random {}".format(i), "text", lambda text=text: text))
    for name, make in sorted(OBJECTS.items()):
        out.append((name, "object", make))
    return out


def _call(fn, value):
    """``fn(value)`` stopped (``Timeout``) after CALL_LIMIT s of this process's CPU, or HANG_LIMIT s
    of wall clock for a call that does not use the CPU: a wall-clock bound alone reported a
    timeout when the machine's load starved a call that was within its CPU bound (a 2-core
    machine at load 40, in tracemalloc's slowed run)."""
    signal.setitimer(signal.ITIMER_PROF, CALL_LIMIT)
    signal.setitimer(signal.ITIMER_REAL, HANG_LIMIT)
    try:
        fn(value)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


def measure(fn, refusals, value):
    """(outcome, seconds, peak bytes, detail). The call runs traced (tracemalloc) for its peak of
    memory; only when that run took long is the time taken again without tracing (which slows
    Python down several times), so that the figure is the call's own. The seconds are the CPU
    time of this (single-threaded) process during the call: what the grammar costs, whatever else
    the machine runs meanwhile (a wall-clock bound failed on a loaded machine); a call that hangs
    or sleeps is still stopped (``_call``)."""
    tracemalloc.start()
    start = time.process_time()
    try:
        _call(fn, value)
        outcome, detail = "accepted", ""
    except Timeout:
        outcome, detail = "timeout", ""
    except refusals as e:
        outcome, detail = "refused", str(e)[:300]
    except BaseException as e:  # noqa: BLE001  -- everything else is the finding
        outcome, detail = "error", "{}: {}".format(type(e).__name__, str(e)[:200])
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if outcome != "timeout" and seconds > 0.05:
        start = time.process_time()
        try:
            _call(fn, value)
        except BaseException:  # noqa: BLE001,S110  -- the outcome was recorded above
            pass
        seconds = min(seconds, time.process_time() - start)
    return outcome, seconds, peak, detail


def main():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    def alarm(*_):
        raise Timeout()
    signal.signal(signal.SIGALRM, alarm)
    signal.signal(signal.SIGPROF, alarm)
    results = []
    for gen_name, kind, make in cases():
        value = make()
        for name, (fn, refusals, domain) in sorted(ENTRY_POINTS.items()):
            if domain == "text" and kind != "text":
                continue
            outcome, seconds, peak, detail = measure(fn, refusals, value)
            results.append([name, gen_name, outcome, round(seconds, 4), peak, detail])
        del value
    json.dump({"python": sys.version.split()[0], "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
