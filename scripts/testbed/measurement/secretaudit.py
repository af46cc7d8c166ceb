"""Where secrets can be found: the secret audit of a testbed run (docs/security.md).

A real search, not a list of keys the code promises not to write: the secrets actually in use are
read where they live (each tunnel device's private key and preshared keys, read on its VNF with
`wg show`; the subscribers' K, OP and OPc and the database password the NS parameters carry), and
every place the run leaves data in is searched for each of them: every relation databag, status,
juju-log line, action result and hook error the emulated VCA holds, every file under the run's
output folder (the VCA's store, the Prometheus data, the captures, report.json) except the
emulated VNFs' own disks, where the keys legitimately live.

Each secret is searched in several forms: exactly as the program prints it; its bytes (a key's
32, a K's 16) raw, in hex (both cases) and in base64, also as the middle of a longer base64 text
at each of the three alignments; and everything textual also with whitespace and the escapes
``\\n \\r \\t`` removed from the searched text, so that a value a log folded across lines (or
that JSON escaped) is found as well. Files are read in blocks of ``BLOCK`` bytes with an overlap of
the longest form, so a 1 GiB log costs the same memory as a small one. Hand-written because no
library searches a stream for many fixed strings with these normalisations: the textual forms
are first narrowed to runs of the characters they can consist of (one regular expression over a
block), and only those runs are searched for each form.
"""
import base64
import collections
import io
import json
import os
import re

BLOCK = 1 << 20
#: What a derived post-quantum preshared key is called in the report (issue 41).
PQ_PSK = "pq-psk"
KINDS = (PQ_PSK, "wireguard-private-key", "subscriber-k", "subscriber-op", "subscriber-opc", "db-password")
#: The NS parameters (params/*.yaml ``${VAR}``) that carry a secret, and what each is.
SECRET_PARAMS = {"LTE_K": "subscriber-k", "LTE_OP": "subscriber-op", "NR_K": "subscriber-k",
                 "NR_OP": "subscriber-op", "MYSQL_PASSWORD": "db-password"}
#: K/OP pairs of the parameters, from which the HSS/MySQL side derives OPc.
OPC_PAIRS = (("LTE_K", "LTE_OP"), ("NR_K", "NR_OP"))
#: Shorter forms would match by chance in megabytes of text.
MIN_FORM = 12
_KEY = re.compile(r"^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw480]=$")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2}){8,}$")
#: Every character a textual form can consist of (base64, hex, and the password grammar's).
_CANDIDATE = re.compile(rb"[A-Za-z0-9+/=._~%^-]{" + str(MIN_FORM).encode() + rb",}")
_CANDIDATE_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=._~%^-")
_ESCAPES = re.compile(rb"\\[nrt]")
_SPACE = b" \t\r\n\f\v"

Secret = collections.namedtuple("Secret", "kind label value")


class AuditError(Exception):
    pass


def normalize(data):
    """The searched text with whitespace and the escapes \\n \\r \\t removed (a folded line)."""
    return _ESCAPES.sub(b"", data).translate(None, _SPACE)


def _raw_bytes(value):
    """The bytes a secret's text stands for: a WireGuard key's 32, a hex value's; else None."""
    if _KEY.match(value):
        return base64.b64decode(value)
    if _HEX.match(value):
        return bytes.fromhex(value)
    return None


def base64_cores(data):
    """The base64 characters that depend only on ``data`` wherever it sits in a longer base64
    text: one string per alignment (offset 0, 1 or 2 modulo 3)."""
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data + b"\0\0")
        first = -(-8 * shift // 6)
        last = (8 * shift + 8 * len(data)) // 6
        cores.append(encoded[first:last])
    return cores


def forms(secret):
    """[(form name, bytes)] of one secret: exact, raw, hex, base64 (standalone and embedded)."""
    text = secret.value.encode()
    raw = _raw_bytes(secret.value)
    out = [("exact", text)]
    if raw is not None:
        out += [("raw", raw), ("hex", raw.hex().encode()), ("HEX", raw.hex().upper().encode()),
                ("base64", base64.b64encode(raw))]
        out += [("base64 embedded", core) for core in base64_cores(raw)]
    out += [("base64 of text", base64.b64encode(text))]
    out += [("base64 of text embedded", core) for core in base64_cores(text)]
    seen, unique = set(), []
    for name, data in out:
        if len(data) >= MIN_FORM and data not in seen:
            seen.add(data)
            unique.append((name, data))
    return unique


class Needles(object):
    """Every form of every secret, sorted by how it is searched: ``binary`` in the raw stream,
    ``textual`` in the normalised stream's candidate runs, ``other`` in the whole normalised stream."""

    def __init__(self, secrets):
        self.secrets = list(secrets)
        self.binary, self.textual, self.other = [], [], []
        #: per secret, its form names in forms()' order: a finding names the most direct one
        self.form_names = [[name for name, _data in forms(s)] for s in self.secrets]
        for index, secret in enumerate(self.secrets):
            for name, data in forms(secret):
                if name == "raw":
                    self.binary.append((data, index, name))
                    continue
                flat = normalize(data)
                if len(flat) < MIN_FORM:
                    continue
                target = self.textual if set(flat) <= _CANDIDATE_CHARS else self.other
                target.append((flat, index, name))
        self.longest = max([len(d) for d, _i, _n in self.binary + self.textual + self.other] or [1])


def scan(stream, needles, block=BLOCK):
    """{(secret index, form name)} found in a binary stream, read ``block`` bytes at a time."""
    found = set()
    keep = needles.longest - 1
    raw_tail = flat_tail = held = b""
    while True:
        data = stream.read(block)
        if not data:
            break
        raw = raw_tail + data
        found.update((i, n) for d, i, n in needles.binary if d in raw)
        raw_tail = raw[-keep:] if keep else b""
        text = held + data
        held = b""
        if text.endswith(b"\\"):                    # an escape may go on in the next block
            held, text = b"\\", text[:-1]
        flat = flat_tail + normalize(text)
        candidates = b"\n".join(_CANDIDATE.findall(flat))
        found.update((i, n) for d, i, n in needles.textual if d in candidates)
        found.update((i, n) for d, i, n in needles.other if d in flat)
        flat_tail = flat[-keep:] if keep else b""
    return found


def search(secrets, places, block=BLOCK):
    """Search every place for every secret. ``places``: (label, opener), ``opener()`` a binary
    stream. Returns {"findings": [(kind, secret label, place, form)], "places": n, "bytes": n}: one
    finding per secret and place, in the most direct form it was found in."""
    needles = Needles(secrets)
    findings, searched, total = [], 0, 0
    for label, opener in places:
        counted = _Counting(opener())
        with counted:
            hits = scan(counted, needles, block) if needles.secrets else set()
        searched, total = searched + 1, total + counted.bytes
        for index in sorted({i for i, _form in hits}):
            secret = needles.secrets[index]
            form = next(name for name in needles.form_names[index] if (index, name) in hits)
            findings.append((secret.kind, secret.label, label, form))
    return {"findings": findings, "places": searched, "bytes": total}


class _Counting(object):
    """A stream that counts what was read from it (the report says how much was searched)."""

    def __init__(self, stream):
        self.stream, self.bytes = stream, 0

    def read(self, n):
        data = self.stream.read(n)
        self.bytes += len(data)
        return data

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.stream.close()


def text_place(label, text):
    return label, lambda: io.BytesIO(text.encode() if isinstance(text, str) else text)


def file_places(root, label, skip=()):
    """Every regular file under ``root`` (symbolic links not followed; a file with several hard
    links searched once), except the folders ``skip`` (paths relative to ``root``)."""
    seen = set()
    skipped = {os.path.normpath(os.path.join(root, s)) for s in skip}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if os.path.normpath(os.path.join(folder, d)) not in skipped)
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue                    # removed meanwhile
            if not _is_regular(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            yield "{}/{}".format(label, os.path.relpath(path, root)), lambda path=path: open(path, "rb")


def _is_regular(mode):
    import stat
    return stat.S_ISREG(mode)


def model_places(model, label):
    """What the emulated VCA (its controller and unit agents) holds: every relation databag,
    every unit's statuses, juju-log lines, last action and other state (its config, where the
    operator put the secrets, excepted), every action result of the run and every hook error."""
    state = json.loads(model.dump())
    for rid, rel in sorted(state.get("relations", {}).items()):
        for owner, bag in sorted(rel.get("data", {}).items()):
            yield text_place("{} relation data {} {}".format(label, rid, owner), json.dumps(bag))
    for unit, held in sorted(state.get("units", {}).items()):
        for key, value in sorted(held.items()):
            if key != "config":
                yield text_place("{} unit {} {}".format(label, unit, key), json.dumps(value))
    for n, result in enumerate(getattr(model, "action_results", [])):
        yield text_place("{} action {} {} #{}".format(label, result.unit, result.name, n),
                         json.dumps([result.results, result.message, result.log]))
    for n, error in enumerate(model.hook_errors):
        yield text_place("{} hook error {} {} #{}".format(label, error.unit, error.hook, n), error.log)


def vnf_secrets(vnfs):
    """Each tunnel device's private key and preshared keys, read on its VNF (``vnfs``: name ->
    a testbed VNF with ``exec`` and ``wg_show``). A PSK "(none)" is no secret; one PSK appears on
    both ends of a tunnel and is searched once."""
    out = []
    for name, vnf in sorted(vnfs.items()):
        devices = vnf.exec(["wg", "show", "interfaces"], check=False).stdout.split()
        for dev in sorted(devices):
            key = vnf.wg_show(dev, "private-key").strip()
            if _KEY.match(key):
                out.append(Secret("wireguard-private-key", "{} {} private key".format(name, dev), key))
            for line in vnf.wg_show(dev, "preshared-keys").splitlines():
                fields = line.split()
                if len(fields) == 2 and _KEY.match(fields[1]):
                    out.append(Secret(PQ_PSK, "{} {} psk with {}".format(name, dev, fields[0][:8]), fields[1]))
    return _dedupe(out)


def param_secrets(params):
    """The secrets the NS parameters carry (``params``: the ${VAR} values), and the OPc the
    subscriber database holds for each K/OP pair (Milenage: OPc = AES-128_K(OP) xor OP)."""
    out = [Secret(kind, var, params[var]) for var, kind in sorted(SECRET_PARAMS.items()) if params.get(var)]
    for k_var, op_var in OPC_PAIRS:
        k, op = params.get(k_var, ""), params.get(op_var, "")
        if _HEX.match(k) and _HEX.match(op) and len(k) == len(op) == 32:
            out.append(Secret("subscriber-opc", "OPc of {}/{}".format(k_var, op_var), opc(k, op)))
    return _dedupe(out)


def opc(k_hex, op_hex):
    """OPc from K and OP (3GPP TS 35.206, Milenage), both 128 bits in hex."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    k, op = bytes.fromhex(k_hex), bytes.fromhex(op_hex)
    enc = Cipher(algorithms.AES(k), modes.ECB()).encryptor()
    return bytes(a ^ b for a, b in zip(enc.update(op) + enc.finalize(), op)).hex()


def _dedupe(secrets):
    by_value = collections.OrderedDict()
    for s in secrets:
        if s.value in by_value:
            old = by_value[s.value]
            if s.label not in old.label.split(", "):
                by_value[s.value] = old._replace(label=old.label + ", " + s.label)
        else:
            by_value[s.value] = s
    return list(by_value.values())


def report_fields(secrets, result):
    """What report.json gets: ``pq_psk_secret_found_in`` (places where a derived PSK was found),
    ``secrets_found_in`` per other kind, and ``secret_audit`` (what was searched). Names and
    places only, never a secret."""
    found = {kind: [] for kind in KINDS}
    for kind, secret_label, place, form in result["findings"]:
        found[kind].append("{}: {} ({})".format(place, secret_label, form))
    counts = collections.Counter(s.kind for s in secrets)
    return {"pq_psk_secret_found_in": found.pop(PQ_PSK),
            "secrets_found_in": found,
            "secret_audit": {"secrets": {kind: counts.get(kind, 0) for kind in KINDS},
                             "places_searched": result["places"], "bytes_searched": result["bytes"]}}


def found_any(fields):
    return bool(fields["pq_psk_secret_found_in"] or any(fields["secrets_found_in"].values()))


class Audit(object):
    """The audit of one testbed run in two steps: ``collect`` while the VNFs are up (their keys
    are read there; what the VCAs hold is taken then), ``finish`` once the run's files are
    written (``extra``: more places, e.g. the report about to be written)."""

    def __init__(self, out_dir, skip=("tb",)):
        self.out_dir, self.skip = out_dir, tuple(skip)
        self.secrets, self.places = [], []

    def collect(self, vnfs, params, models):
        """``models``: {label: vca.Model}; ``params``: the NS parameters' ${VAR} values. Called
        again (after each operation of a lifecycle run, whose key rotations retire keys), it adds
        the secrets now in use to those already collected and takes the VCAs' current state."""
        self.secrets = _dedupe(self.secrets + vnf_secrets(vnfs) + param_secrets(params))
        self.places = [p for label, model in sorted(models.items()) for p in model_places(model, label)]

    def finish(self, extra=()):
        places = self.places + list(extra) + list(file_places(self.out_dir, "file", self.skip))
        return report_fields(self.secrets, search(self.secrets, places))


def loud_lines(fields):
    """One line per finding, for the terminal: where, which secret, in which form."""
    lines = ["SECRET FOUND ({}): {}".format(PQ_PSK, f) for f in fields["pq_psk_secret_found_in"]]
    for kind, where in sorted(fields["secrets_found_in"].items()):
        lines += ["SECRET FOUND ({}): {}".format(kind, f) for f in where]
    return lines
