"""Preparing a MicroStack (or any OpenStack) site with the openstack CLI: images, flavors, the
management network and the security-group rules the VNFs need. Each resource is looked up first
(`show`/`list -f json`) and only created when missing."""

import hashlib
import ipaddress
import json
import os
import re
import urllib.parse
import urllib.request

from deploy.catalog import vdu_resources
from deploy.prereq import openstack_for_site
from vpnaas.core import refpoints
from vpnaas.core.rotation import PORT_OFFSET as ROTATION_PORT_OFFSET
from vpnaas.vnf.metrics import DEFAULT_PORT as METRICS_PORT


class PrepareError(Exception):
    pass


def _json(result, default):
    if not result.ok or not result.stdout.strip():
        return default
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise PrepareError(
            "unexpected output from {}: {!r}".format(" ".join(result.argv[:4]), result.stdout[:200])
        ) from None


# -- flavors and images derived from the packages --------------------------------------------


def flavor_name(cfg, vnfd_id, vdu_id, single_vdu):
    base = "{}.{}".format(cfg.get("FLAVOR_PREFIX"), vnfd_id)
    return base if single_vdu else "{}.{}".format(base, vdu_id)


def flavors_for(cfg, catalog, vnfd_ids):
    """[(flavor name, vcpus, ram MiB, disk GB)] for the VNFDs, from their own compute descriptors:
    the double-resource variants have their own VNFD ids, so they get their own flavors."""
    out = []
    for vnfd_id in vnfd_ids:
        vdus = vdu_resources(catalog.vnfd(vnfd_id))
        for vdu_id, vcpus, ram, disk, _ in vdus:
            out.append((flavor_name(cfg, vnfd_id, vdu_id, len(vdus) == 1), vcpus, ram, disk))
    return out


def images_for(catalog, vnfd_ids):
    names = []
    for vnfd_id in vnfd_ids:
        for *_, image in vdu_resources(catalog.vnfd(vnfd_id)):
            if image and image not in names:
                names.append(image)
    return names


def _expected_sha256(sums, name, fetch):
    """The sha256 that the checksum file ``sums`` (lines `<hex> *<name>` or `<hex>  <name>`) lists
    for ``name``."""
    try:
        text = fetch(sums)
    except (OSError, ValueError) as e:
        raise PrepareError("cannot read the checksum file {}: {}".format(sums, e)) from None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == name and re.fullmatch(r"[0-9a-fA-F]{64}", parts[0]):
            return parts[0].lower()
    raise PrepareError("{} lists no sha256 for {}".format(sums, name))


def _sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -- steps ----------------------------------------------------------------------------------


class Site:
    """One OpenStack site: its client command and credentials."""

    def __init__(self, runner, cfg, openstack, number, state):
        self.runner = runner
        self.cfg = cfg
        # never MicroStack's wrapper for site 2: it would act on the local site (see prereq)
        # (prereq has already named a missing client; a dry run prints the plain command name)
        self.os = openstack_for_site(cfg, openstack, number) or "openstack"
        self.number = number
        self.env = cfg.site_env(number)
        self.state = state
        self.scope = "site{}".format(number)

    def read(self, *args, dry_present=False):
        return self.runner.read([self.os] + list(args), env=self.env, dry_present=dry_present)

    def run(self, *args, timeout=None):
        return self.runner.run([self.os] + list(args), env=self.env, timeout=timeout)

    def exists(self, kind, name):
        return self.read(kind, "show", name, "-f", "json").ok

    # images ---------------------------------------------------------------------------------
    def ensure_images(self, needed):
        configured = dict(self.cfg.images())
        for name, source in self.cfg.images():
            if name not in needed:
                continue   # the NS's VNFDs do not use it (an EPS needs no 22.04 image, a 5G SA NS no 18.04)
            if self.exists("image", name):
                self.runner.say("    image {} exists".format(name))
                continue
            path = self._local_image(source)
            self.run(
                "image",
                "create",
                "--file",
                path,
                "--disk-format",
                self.cfg.get("IMAGE_DISK_FORMAT", "qcow2"),
                "--container-format",
                "bare",
                "--public",
                name,
                timeout=self.cfg.seconds("IMAGE_TIMEOUT"),
            )
            self.state.record(self.scope, "images", name)
        for name in needed:
            if name in configured:
                continue
            if not self.exists("image", name):
                message = (
                    "the VNFDs use image {!r}, which site {} does not have: set IMAGE (and IMAGE_NAME={}) "
                    "or EXTRA_IMAGES={}=<path or URL>".format(name, self.number, name, name)
                )
                if not self.runner.dry_run:
                    raise PrepareError(message)
                self.runner.say("    warning (dry run): " + message)

    def _local_image(self, source):
        parsed = urllib.parse.urlparse(source)
        if parsed.scheme not in ("http", "https"):
            path = os.path.abspath(os.path.expanduser(source))
            if not os.path.isfile(path) and not self.runner.dry_run:
                raise PrepareError("image file {} does not exist".format(path))
            return path
        cache = self.cfg.path("IMAGE_CACHE_DIR")
        name = os.path.basename(parsed.path) or "image.img"
        path = os.path.join(cache, name)
        sums = self.cfg.checksums_for(source)
        if self.runner.dry_run:
            self.runner.say("+ download {} -> {}".format(source, path))
            if sums:
                self.runner.say("    (verified against {})".format(sums))
            return path
        expected = _expected_sha256(sums, name, self._fetch_text) if sums else None
        if os.path.isfile(path):
            if expected is None or _sha256_of(path) == expected:
                return path
            self.runner.say("    cached {} does not match {}: downloading it again".format(path, sums))
        self.runner.say("+ download {} -> {}".format(source, path))
        os.makedirs(cache, exist_ok=True)
        tmp = path + ".part"
        digest = hashlib.sha256()
        # A bounded socket timeout: a stalled mirror fails instead of hanging the deploy.
        with urllib.request.urlopen(source, timeout=self.cfg.seconds("CMD_TIMEOUT")) as resp, open(
            tmp, "wb"
        ) as f:
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
                f.write(chunk)
        if expected is not None and digest.hexdigest() != expected:
            os.remove(tmp)
            raise PrepareError(
                "{} has sha256 {} but {} says {}: download refused (nothing kept)".format(
                    source, digest.hexdigest(), sums, expected
                )
            )
        os.replace(tmp, path)
        if expected is not None:
            self.runner.say("    sha256 {} matches {}".format(expected, sums))
        return path

    def _fetch_text(self, where):
        if urllib.parse.urlparse(where).scheme in ("http", "https"):
            with urllib.request.urlopen(where, timeout=self.cfg.seconds("CMD_TIMEOUT")) as resp:
                return resp.read().decode("utf-8", "replace")
        with open(os.path.expanduser(where)) as f:
            return f.read()

    # flavors --------------------------------------------------------------------------------
    def ensure_flavors(self, flavors):
        for name, vcpus, ram, disk in flavors:
            found = _json(self.read("flavor", "show", name, "-f", "json"), None)
            if found is not None:
                have = (int(found.get("vcpus", -1)), int(found.get("ram", -1)), int(found.get("disk", -1)))
                if have != (vcpus, ram, disk):
                    # Flavors cannot be edited; deleting one in use would break running VMs.
                    raise PrepareError(
                        "flavor {} exists with vcpus/ram/disk {} but the VNFD needs {}; delete it "
                        "(openstack flavor delete {}) or change FLAVOR_PREFIX".format(
                            name, have, (vcpus, ram, disk), name
                        )
                    )
                self.runner.say("    flavor {} exists".format(name))
                continue
            self.run("flavor", "create", "--vcpus", str(vcpus), "--ram", str(ram), "--disk", str(disk), name)
            self.state.record(self.scope, "flavors", name)

    # management network ---------------------------------------------------------------------
    def ensure_mgmt_network(self):
        net, subnet, router = self.cfg.get("MGMT_NETWORK"), self.cfg.mgmt_subnet, self.cfg.mgmt_router
        external = self.cfg.get("EXTERNAL_NETWORK")
        if self.exists("network", net):
            self.runner.say("    network {} exists".format(net))
        else:
            self.run("network", "create", net)
            self.state.record(self.scope, "networks", net)
        if self.exists("subnet", subnet):
            self.runner.say("    subnet {} exists".format(subnet))
        else:
            self.run(
                "subnet",
                "create",
                "--network",
                net,
                "--subnet-range",
                self.cfg.get("MGMT_SUBNET_CIDR"),
                "--dns-nameserver",
                self.cfg.get("DNS_SERVER"),
                subnet,
            )
            self.state.record(self.scope, "subnets", subnet)
        if external and not self.exists("network", external):
            message = (
                "external network {!r} not found on site {}: MicroStack creates `external` at init; "
                "set EXTERNAL_NETWORK".format(external, self.number)
            )
            if not self.runner.dry_run:
                raise PrepareError(message)
            self.runner.say("    note (dry run): " + message)
        if self.exists("router", router):
            self.runner.say("    router {} exists".format(router))
        else:
            self.run("router", "create", router)
            self.state.record(self.scope, "routers", router)
            if external:
                self.run("router", "set", "--external-gateway", external, router)
        ports = _json(
            self.read("port", "list", "--router", router, "--fixed-ip", "subnet=" + subnet, "-f", "json"), []
        )
        if ports:
            self.runner.say("    router {} already has an interface on {}".format(router, subnet))
        else:
            self.run("router", "add", "subnet", router, subnet)
            self.state.record(self.scope, "router_interfaces", [router, subnet])

    # security group -------------------------------------------------------------------------
    def wanted_rules(self):
        """[(protocol, port range or None, remote prefix, why)] of the group every VNF port has.

        The WireGuard metrics exporter (TCP 9586) is opened only from the management network and
        OSM's own address (``METRICS_SCRAPE_FROM``), never from anywhere: the group covers every
        port of a VM with port security, the data networks' too, and neither OSM (RO applies the
        VIM account's groups, or a VDU's ``security-group-name``, to all ports of a VM) nor
        MicroStack's defaults give the management port a group of its own. A data-network port
        with port security cannot send a management-network source (Neutron's anti-spoofing);
        a port without port security (S1-U, SGi, N3, N6) gets no group at all."""
        ports = [refpoints.GENERIC_PORT] + [p for p, _, _ in refpoints.REFERENCE_POINTS.values()]
        rotation = [p + ROTATION_PORT_OFFSET for p in ports]
        anywhere = "0.0.0.0/0"
        rules = [
            ("tcp", "22:22", anywhere, "SSH: the proxy charms log in to the VNFs"),
            ("udp", "{}:{}".format(min(ports), max(ports)), anywhere, "WireGuard listen ports"),
            ("udp", "{}:{}".format(min(rotation), max(rotation)), anywhere, "WireGuard rotation ports (rotate-keys)"),
            ("icmp", None, anywhere, "ping (measurements, reachability)"),
            ("tcp", "5201:5201", anywhere, "iperf3 (measurements between sites)"),
        ]
        port = METRICS_PORT
        for prefix in self.cfg.metrics_sources():
            rules.append(("tcp", "{}:{}".format(port, port), prefix,
                          "WireGuard metrics exporter for OSM's Prometheus, from the management network only"))
        return rules

    def ensure_security_rules(self):
        group = self.cfg.get("SECURITY_GROUP")
        rules = _json(self.read("security", "group", "rule", "list", group, "--ingress", "-f", "json"), [])
        for proto, ports, remote, why in self.wanted_rules():
            covering = [rule for rule in rules if _rule_covers(rule, proto, ports, remote)]
            if covering:
                self.runner.say("    {} {} from {} already allowed in {} ({})".format(
                    proto, ports or "", remote, group, why))
                if ports == "{0}:{0}".format(METRICS_PORT) and any(_remote(r) != _network(remote) for r in covering):
                    self.runner.say("    warning: {} allows tcp {} from {}: the metrics exporter is reachable on "
                                    "the data networks too; delete that rule to keep it on the management "
                                    "network".format(group, METRICS_PORT, ", ".join(sorted({str(_remote(r))
                                                                                        for r in covering}))))
                continue
            network = _network(remote)
            argv = ["security", "group", "rule", "create", "--ingress", "--ethertype",
                    "IPv{}".format(network.version), "--protocol", proto]
            if ports:
                argv += ["--dst-port", ports]
            argv += ["--remote-ip", str(network), "--description", "vpnaas: " + why, "-f", "json", group]
            result = self.run(*argv)
            created = _json(result, {})
            if created.get("id"):
                self.state.record(self.scope, "security_rules", created["id"])


def _network(prefix):
    return ipaddress.ip_network(str(prefix), strict=False)


def _remote(rule):
    """The remote prefix of a rule row (`security group rule list -f json`; column names differ
    between client versions); None when the rule names a remote group instead."""
    norm = {k.lower().replace("_", " "): v for k, v in rule.items()}
    if norm.get("remote security group"):
        return None
    ethertype = str(norm.get("ethertype") or "IPv4")
    default = "::/0" if ethertype.lower() == "ipv6" else "0.0.0.0/0"
    try:
        return _network(norm.get("ip range") or norm.get("remote ip prefix") or default)
    except ValueError:
        return None


def _rule_covers(rule, proto, ports, remote="0.0.0.0/0"):
    """Whether an existing ingress rule already allows proto/ports from every address of ``remote``."""
    norm = {k.lower().replace("_", " "): v for k, v in rule.items()}
    want = _network(remote)
    have_remote = _remote(rule)
    if have_remote is None or have_remote.version != want.version or not want.subnet_of(have_remote):
        return False
    rule_proto = norm.get("ip protocol") or norm.get("protocol") or "any"
    if str(rule_proto).lower() not in (proto, "any", "none", ""):
        return False
    if ports is None:
        return True
    want_lo, want_hi = (int(x) for x in ports.split(":"))
    have = norm.get("port range") or ""
    if not have:  # no port range = every port
        return True
    lo, _, hi = str(have).partition(":")
    try:
        return int(lo) <= want_lo and int(hi or lo) >= want_hi
    except ValueError:
        return False


def host_settings(cfg, multi_site):
    """What the tool cannot do for the operator: settings on the MicroStack hosts themselves."""
    lines = [
        "On every MicroStack host (root; the thesis did the same, appendix A):",
        "  sudo sysctl -w net.ipv4.ip_forward=1",
        "  echo net.ipv4.ip_forward=1 | sudo tee /etc/sysctl.d/60-vpnaas.conf   # keep it after reboot",
        "  # MicroStack itself masquerades its external network (ext-cidr) when it sets up br-ex, so",
        "  # VNFs reach the internet (OAI is built from source on them) without another NAT rule.",
    ]
    if multi_site:
        lines += [
            "Multi-site: the two sites' external (floating-IP) networks must route to each other, and OSM",
            "  must reach both Keystone endpoints; the WireGuard UDP ports {}-{} must pass between "
            "them.".format(refpoints.GENERIC_PORT, max(p for p, _, _ in refpoints.REFERENCE_POINTS.values())),
        ]
    return lines
