"""Deploy configuration: defaults < deploy.env file < process environment.

The file is plain KEY=VALUE lines (``export`` prefix and quotes allowed, ``#`` comments); it is
read as data, never sourced by a shell, so values are not expanded. The process environment wins
so that ``DRY_RUN=1 make deploy`` or ``VIM_ACCOUNT=x make deploy`` override the file.
"""

import ipaddress
import os
import re

from deploy import ROOT

DEFAULTS = {
    "DRY_RUN": "0",
    "OSM_HOSTNAME": "",
    "OSM_CLI": "osm",
    # Empty: the openstack client of the project's virtualenv, else the one on PATH.
    # MicroStack users may set microstack.openstack.
    "OPENSTACK_CLI": "",
    # `deploy upgrade`: the juju client of OSM's VCA (for charms OSM cannot upgrade itself), its
    # controller (empty: the client's current one), and "juju" to upgrade every VNF through it.
    "JUJU_CLI": "juju",
    "JUJU_CONTROLLER": "",
    "UPGRADE_VIA": "",
    # VIM accounts (names as OSM knows them) and how they reach OpenStack.
    "VIM_ACCOUNT": "microstack",
    "VIM_ACCOUNT_SITE2": "microstack-site2",
    "VIM_USE_FLOATING_IP": "true",
    "VIM_INSECURE": "true",
    # MicroStack's own `microstack init` creates network test / test-subnet / test-router on
    # 192.168.222.0/24 behind `external`; these defaults therefore find and reuse them.
    "MGMT_NETWORK": "test",
    "MGMT_SUBNET": "",  # empty: <MGMT_NETWORK>-subnet
    "MGMT_ROUTER": "",  # empty: <MGMT_NETWORK>-router
    "MGMT_SUBNET_CIDR": "192.168.222.0/24",
    "DNS_SERVER": "8.8.8.8",
    "EXTERNAL_NETWORK": "external",
    "SECURITY_GROUP": "default",
    # Who may reach the VNFs' WireGuard metrics exporter (TCP 9586): comma-separated prefixes;
    # empty: the management subnet and OSM_HOSTNAME (when it is an address); "none": nobody.
    "METRICS_SCRAPE_FROM": "",
    "IMAGE": "",  # path or http(s) URL of the Ubuntu 18.04 cloud image; empty: IMAGE_URL
    # The official Ubuntu 18.04 cloud image and the release's checksum file it is verified against.
    "IMAGE_URL": "https://cloud-images.ubuntu.com/releases/bionic/release/ubuntu-18.04-server-cloudimg-amd64.img",
    "IMAGE_SHA256SUMS": "",  # empty: SHA256SUMS next to IMAGE_URL (for IMAGE: no check unless set)
    "IMAGE_NAME": "ubuntu18.04",
    # The Ubuntu 22.04 image of the 5G standalone VNFs (uploaded only for an NS that uses it).
    "IMAGE_2204": "",  # path or http(s) URL; empty: IMAGE_2204_URL
    "IMAGE_2204_URL": "https://cloud-images.ubuntu.com/releases/jammy/release/ubuntu-22.04-server-cloudimg-amd64.img",
    "IMAGE_2204_NAME": "ubuntu22.04",
    "EXTRA_IMAGES": "",  # name=path-or-url,name=path-or-url (e.g. ubuntu20.04=...)
    "IMAGE_CACHE_DIR": "build/deploy/images",
    "FLAVOR_PREFIX": "vpnaas",
    "NS_NAME_PREFIX": "vpnaas",
    "SSH_KEYS": "",  # comma-separated public key files for ns-create --ssh_keys
    "LTE_K": "",
    "LTE_OP": "",
    # The 5G SA NS's subscriber keys and the AMF's MySQL password (params/sa*.yaml).
    "NR_K": "",
    "NR_OP": "",
    "MYSQL_PASSWORD": "",
    # Bounded waits (seconds).
    "CMD_TIMEOUT": "300",
    "IMAGE_TIMEOUT": "3600",
    "NS_READY_TIMEOUT": "5400",  # OAI is built from source on the VNFs: this is the long one
    "TUNNEL_TIMEOUT": "900",
    "ACTION_TIMEOUT": "900",
    "DELETE_TIMEOUT": "1800",
    "UPGRADE_TIMEOUT": "1800",  # one ns-update or juju refresh (NBI refuses ns-update timeouts under 300 s)
    "POLL_INTERVAL": "30",
    # Measurements (thesis defaults: 600 s iperf3 with 60 s reports, 1000 pings at 0.2 s).
    "MEASURE_SECONDS": "600",
    "MEASURE_INTERVAL": "60",
    "PING_COUNT": "1000",
    "PING_INTERVAL": "0.2",
    "MEASURE_MSS_S6A": "1362",
    # The UE at the end of make deploy (deploy/ue.py): 0 skips it.
    "UE": "1",
    "UE_ATTACH_TIMEOUT": "600",
    "UE_IPERF_SECONDS": "10",
}

#: Values never printed: redacted wherever a command line or message is shown.
SECRET_KEYS = (
    "LTE_K",
    "LTE_OP",
    "NR_K",
    "NR_OP",
    "MYSQL_PASSWORD",
    "OS_PASSWORD",
    "SITE2_OS_PASSWORD",
    "VIM_PASSWORD",
    "VIM2_PASSWORD",
    "OS_TOKEN",
    "SITE2_OS_TOKEN",
)
_SECRET_PATTERN = re.compile(r"(PASSWORD|SECRET|TOKEN)$|^(LTE|NR)_(K|OP|OPC)$")

#: OpenStack client variables that make up one site's credentials.
OS_VARS = (
    "OS_CLOUD",
    "OS_AUTH_URL",
    "OS_USERNAME",
    "OS_PASSWORD",
    "OS_PROJECT_NAME",
    "OS_PROJECT_ID",
    "OS_USER_DOMAIN_NAME",
    "OS_PROJECT_DOMAIN_NAME",
    "OS_REGION_NAME",
    "OS_CACERT",
    "OS_INSECURE",
    "OS_IDENTITY_API_VERSION",
    "OS_INTERFACE",
    "OS_TOKEN",
    "OS_AUTH_TYPE",
)

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


class ConfigError(Exception):
    pass


def parse_env_file(text, where="deploy.env"):
    values = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise ConfigError("{}:{}: expected KEY=VALUE, got {!r}".format(where, lineno, line.strip()))
        key, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = re.sub(r"\s+#.*$", "", value)  # trailing comment on an unquoted value
        values[key] = value
    return values


class Config:
    def __init__(self, environ=None, env_file=None, root=None):
        environ = dict(os.environ if environ is None else environ)
        # DEPLOY_ROOT: another checkout or a test tree holding build/ and params/.
        self.root = root or environ.get("DEPLOY_ROOT") or ROOT
        if env_file is None:
            env_file = environ.get("DEPLOY_ENV") or os.path.join(self.root, "deploy.env")
            required = "DEPLOY_ENV" in environ
        else:
            required = True
        file_values = {}
        if os.path.exists(env_file):
            with open(env_file) as f:
                file_values = parse_env_file(f.read(), env_file)
        elif required:
            raise ConfigError("configuration file {} does not exist".format(env_file))
        self.env_file = env_file if os.path.exists(env_file) else None
        self.values = dict(DEFAULTS)
        self.values.update(file_values)
        self.values.update({k: v for k, v in environ.items()})

    # -- plain access ---------------------------------------------------------------------
    def get(self, key, default=""):
        return self.values.get(key, default)

    def flag(self, key):
        return str(self.get(key, "")).strip().lower() in ("1", "true", "yes", "on")

    def seconds(self, key):
        value = self.get(key)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError("{} must be a number of seconds, got {!r}".format(key, value)) from None
        if number <= 0:
            raise ConfigError("{} must be positive, got {!r}".format(key, value))
        return number

    def path(self, key):
        value = self.get(key)
        return value if os.path.isabs(value) else os.path.join(self.root, value)

    @property
    def dry_run(self):
        return self.flag("DRY_RUN")

    def secrets(self):
        """Every secret value currently configured (non-empty), longest first for redaction."""
        found = set()
        for key, value in self.values.items():
            if value and len(value) >= 4 and (key in SECRET_KEYS or _SECRET_PATTERN.search(key)):
                found.add(value)
        return sorted(found, key=len, reverse=True)

    # -- derived names --------------------------------------------------------------------
    @property
    def mgmt_subnet(self):
        return self.get("MGMT_SUBNET") or self.get("MGMT_NETWORK") + "-subnet"

    @property
    def mgmt_router(self):
        return self.get("MGMT_ROUTER") or self.get("MGMT_NETWORK") + "-router"

    def metrics_sources(self):
        """The prefixes the security group lets reach the metrics exporter: METRICS_SCRAPE_FROM,
        else the management subnet and OSM's own address (OSM's Prometheus scrapes from there)."""
        text = self.get("METRICS_SCRAPE_FROM").strip()
        if text.lower() == "none":
            return []
        if text:
            items = [x.strip() for x in text.split(",") if x.strip()]
        else:
            items = [self.get("MGMT_SUBNET_CIDR")]
            host = self.get("OSM_HOSTNAME").strip()
            host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host.strip("[]")
            try:
                items.append(str(ipaddress.ip_network(host)))
            except ValueError:
                pass     # a DNS name: the management subnet only (set METRICS_SCRAPE_FROM)
        out = []
        for item in items:
            try:
                net = ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ConfigError("METRICS_SCRAPE_FROM: {!r} is not a prefix".format(item)) from None
            if net.prefixlen == 0:
                raise ConfigError("METRICS_SCRAPE_FROM: {} would open the metrics exporter to every address "
                                  "(on the data networks too); name the management network or OSM's "
                                  "address".format(net))
            if str(net) not in out:
                out.append(str(net))
        return out

    def images(self):
        """[(image name, path or URL)] that can be uploaded: the main Ubuntu 18.04 image first, then the
        Ubuntu 22.04 one (5G SA), then EXTRA_IMAGES. Each is uploaded only for an NS that uses it."""
        out = [(self.get("IMAGE_NAME"), self.get("IMAGE") or self.get("IMAGE_URL")),
               (self.get("IMAGE_2204_NAME"), self.get("IMAGE_2204") or self.get("IMAGE_2204_URL"))]
        for item in filter(None, (x.strip() for x in self.get("EXTRA_IMAGES").split(","))):
            name, sep, source = item.partition("=")
            if not sep or not name.strip() or not source.strip():
                raise ConfigError("EXTRA_IMAGES: expected name=path-or-url, got {!r}".format(item))
            out.append((name.strip(), source.strip()))
        return out

    def checksums_for(self, source):
        """The SHA256SUMS file (URL or path) a downloaded image is verified against, or None:
        IMAGE_SHA256SUMS when set, else the release's own for the default image."""
        if self.get("IMAGE_SHA256SUMS") and source in (self.get("IMAGE"), self.get("IMAGE_URL")):
            return self.get("IMAGE_SHA256SUMS")
        if not self.get("IMAGE") and source == self.get("IMAGE_URL"):
            return source.rsplit("/", 1)[0] + "/SHA256SUMS"
        if not self.get("IMAGE_2204") and source == self.get("IMAGE_2204_URL"):
            return source.rsplit("/", 1)[0] + "/SHA256SUMS"
        return None

    # -- sites ----------------------------------------------------------------------------
    def site_env(self, site):
        """Environment overrides for the openstack client of site 1 or 2.

        Site 1 uses OS_*; site 2 uses SITE2_OS_* (every OS_* of site 1 is removed so that the two
        sets can never mix)."""
        if site == 1:
            return {k: self.values[k] for k in OS_VARS if self.values.get(k)}
        env = {k: None for k in OS_VARS}
        for k in OS_VARS:
            value = self.values.get("SITE2_" + k)
            if value:
                env[k] = value
        return env

    def site_has_credentials(self, site):
        env = {k: v for k, v in self.site_env(site).items() if v}
        if env.get("OS_CLOUD"):
            return True, []
        missing = [
            k for k in ("OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME") if not env.get(k)
        ]
        prefix = "" if site == 1 else "SITE2_"
        return not missing, [prefix + k for k in missing]

    def vim_credentials(self, site):
        """(auth_url, user, password, tenant) for `osm vim-create`; VIM_* / VIM2_* override OS_*."""
        vim, os_prefix = ("VIM_", "") if site == 1 else ("VIM2_", "SITE2_")
        pick = [
            self.get(vim + a) or self.get(os_prefix + b)
            for a, b in (
                ("AUTH_URL", "OS_AUTH_URL"),
                ("USER", "OS_USERNAME"),
                ("PASSWORD", "OS_PASSWORD"),
                ("TENANT", "OS_PROJECT_NAME"),
            )
        ]
        missing = [vim + a for a, v in zip(("AUTH_URL", "USER", "PASSWORD", "TENANT"), pick) if not v]
        return pick, missing

    def vim_account(self, site):
        return self.get("VIM_ACCOUNT") if site == 1 else self.get("VIM_ACCOUNT_SITE2")

    def render_env(self):
        """The mapping params templates are rendered with (${VAR} references)."""
        return dict(self.values)
