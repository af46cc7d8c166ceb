"""The package catalog (build/packages/catalog.json) and what the deploy reads from packages.

The catalog is written by `make packages` (scripts/bundle/packages.py). Member-vnf-indexes,
tunnels, flavors and images are read from the descriptors inside the built packages, never
hard-coded here, so a changed descriptor cannot drift away from what the deploy does.
"""

import copy
import json
import os
import tarfile

import yaml

from deploy import ROOT

CATALOG = os.path.join("build", "packages", "catalog.json")


class CatalogError(Exception):
    pass


class Variant:
    def __init__(self, name, entry):
        self.name = name
        self.kind = entry.get("kind")
        if self.kind not in ("ns", "nsi"):
            raise CatalogError("variant {}: kind must be ns or nsi, got {!r}".format(name, self.kind))
        # descriptor_ids (a list) where the catalog has it; else descriptor_id, an id or a list.
        ids = entry.get("descriptor_ids") or entry.get("descriptor_id")
        self.descriptor_ids = list(ids) if isinstance(ids, (list, tuple)) else [ids]
        if not self.descriptor_ids or not all(isinstance(i, str) and i for i in self.descriptor_ids):
            raise CatalogError("variant {}: descriptor_id must be an id or a list of ids".format(name))
        params = entry.get("params")
        self.params = list(params) if isinstance(params, (list, tuple)) else [params]
        if len(self.params) not in (1, len(self.descriptor_ids)) or not all(self.params):
            raise CatalogError("variant {}: params must be one file or one per descriptor id".format(name))
        self.packages = list(entry.get("packages") or [])
        if not self.packages:
            raise CatalogError("variant {}: no packages listed".format(name))

    def params_for(self, index):
        return self.params[index] if len(self.params) > 1 else self.params[0]


class Catalog:
    def __init__(self, data, root=ROOT, where=CATALOG):
        self.root = root
        self.where = where
        for key in ("vnf", "ns", "nst", "variants"):
            if key not in data:
                raise CatalogError("{}: missing key {!r}".format(where, key))
        # Package paths may be relative to the project root (build/packages/x.tar.gz) or to the
        # catalog's own folder (x.tar.gz); both are turned into one form, relative to the root when
        # below it, so that printed commands run from the project root.
        self._catalog_dir = os.path.dirname(os.path.abspath(where))
        self.vnf = [self._fix(i, "package") for i in data["vnf"]]
        self.ns = [self._fix(i, "package") for i in data["ns"]]
        self.nst = [self._fix(i, "file") for i in data["nst"]]
        self.variants = {}
        for name, v in data["variants"].items():
            v = dict(v)
            v["packages"] = [self._path(p) for p in v.get("packages") or []]
            self.variants[name] = v
        self._by_path = {}
        for kind, items, file_key in (
            ("vnf", self.vnf, "package"),
            ("ns", self.ns, "package"),
            ("nst", self.nst, "file"),
        ):
            for item in items:
                if "id" not in item or file_key not in item:
                    raise CatalogError("{}: every {} entry needs id and {}".format(where, kind, file_key))
                self._by_path[os.path.normpath(item[file_key])] = (kind, item["id"])

    def _path(self, rel):
        if os.path.isabs(rel) or os.path.exists(os.path.join(self.root, rel)):
            return rel
        candidate = os.path.join(self._catalog_dir, rel)
        if os.path.exists(candidate):
            full = os.path.abspath(candidate)
            inside = os.path.commonpath([full, os.path.abspath(self.root)]) == os.path.abspath(self.root)
            return os.path.relpath(full, self.root) if inside else full
        return rel

    def _fix(self, item, key):
        item = dict(item)
        if key in item:
            item[key] = self._path(item[key])
        return item

    @classmethod
    def load(cls, root=ROOT, path=None):
        path = path or os.path.join(root, CATALOG)
        if not os.path.exists(path):
            raise CatalogError("{} does not exist: build the packages first (make packages)".format(path))
        with open(path) as f:
            try:
                data = json.load(f)
            except ValueError as exc:
                raise CatalogError("{}: not JSON: {}".format(path, exc)) from None
        return cls(data, root=root, where=path)

    def abspath(self, rel):
        return rel if os.path.isabs(rel) else os.path.join(self.root, rel)

    def variant(self, name):
        if name not in self.variants:
            raise CatalogError(
                "unknown NS variant {!r}; the catalog has: {}".format(name, ", ".join(sorted(self.variants)))
            )
        return Variant(name, self.variants[name])

    def classify(self, package):
        """(kind, descriptor id) of a package path listed in a variant."""
        key = os.path.normpath(package)
        if key not in self._by_path:
            raise CatalogError("{}: package {} is not in the vnf/ns/nst lists".format(self.where, package))
        return self._by_path[key]

    def ordered(self, packages):
        """Packages in the order OSM needs them (NBI checks references at upload): every VNF, then
        every NS, then every NST; the catalog's own order is kept within each kind."""
        rank = {"vnf": 0, "ns": 1, "nst": 2}
        items = [(self.classify(p), p) for p in packages]
        return [(kind, ident, p) for (kind, ident), p in sorted(items, key=lambda x: rank[x[0][0]])]

    def all_packages(self):
        seen, out = set(), []
        for kind, items, file_key in (
            ("vnf", self.vnf, "package"),
            ("ns", self.ns, "package"),
            ("nst", self.nst, "file"),
        ):
            for item in items:
                if item[file_key] not in seen:
                    seen.add(item[file_key])
                    out.append((kind, item["id"], item[file_key]))
        return out

    def package_of(self, kind, ident):
        items, file_key = {
            "vnf": (self.vnf, "package"),
            "ns": (self.ns, "package"),
            "nst": (self.nst, "file"),
        }[kind]
        for item in items:
            if item["id"] == ident:
                return item[file_key]
        raise CatalogError("{}: no {} with id {}".format(self.where, kind, ident))

    # -- descriptors ----------------------------------------------------------------------
    def descriptor(self, rel):
        return read_descriptor(self.abspath(rel))

    def nsd(self, nsd_id):
        return nsd_of(self.descriptor(self.package_of("ns", nsd_id)))

    def vnfd(self, vnfd_id):
        return vnfd_of(self.descriptor(self.package_of("vnf", vnfd_id)))

    def nst_doc(self, nst_id):
        return nst_of(self.descriptor(self.package_of("nst", nst_id)))


#: (absolute path, mtime, size) -> descriptor: a package is a tar.gz of several MB (its charms),
#: and the flows read the same VNFD many times (flavors, images, members, every variant).
_DESCRIPTORS = {}


def read_descriptor(path):
    """The descriptor of a tar.gz package (the one yaml/json directly in its top folder, which is
    what NBI reads) or of a bare yaml file. Read once per file version; each caller gets its own
    copy."""
    if not os.path.exists(path):
        raise CatalogError("{} does not exist (make packages)".format(path))
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    if key not in _DESCRIPTORS:
        _DESCRIPTORS[key] = _read_descriptor(path)
    return copy.deepcopy(_DESCRIPTORS[key])


def _read_descriptor(path):
    if path.endswith((".yaml", ".yml", ".json")):
        with open(path) as f:
            return yaml.safe_load(f)
    with tarfile.open(path, "r:*") as tar:
        found = [
            m
            for m in tar.getmembers()
            if m.isfile() and m.name.count("/") == 1 and m.name.endswith((".yaml", ".yml", ".json"))
        ]
        if len(found) != 1:
            raise CatalogError(
                "{}: expected exactly one descriptor in the top folder, found {}".format(
                    path, [m.name for m in found]
                )
            )
        return yaml.safe_load(tar.extractfile(found[0]).read().decode("utf-8"))


def vnfd_of(doc):
    vnfd = doc.get("vnfd") or doc.get("etsi-nfv-vnfd:vnfd")
    if not isinstance(vnfd, dict):
        raise CatalogError("not a SOL006 VNFD (no top-level vnfd mapping)")
    return vnfd


def nsd_of(doc):
    try:
        return doc["nsd"]["nsd"][0]
    except (KeyError, IndexError, TypeError):
        raise CatalogError("not a SOL006 NSD (no nsd: nsd: [...])") from None


def nst_of(doc):
    nst = doc.get("nst")
    if isinstance(nst, dict):
        nst = nst.get("nst")
    if not isinstance(nst, list) or not nst:
        raise CatalogError("not an NST (no nst: [...])")
    return nst[0]


# -- NSD contents ---------------------------------------------------------------------------


def members(nsd):
    """{member-vnf-index: vnfd id}; the vnf-profile id is the member-vnf-index (OSM's NSD model)."""
    out = {}
    for df in (nsd.get("df") or [])[:1]:  # LCM only uses df[0]
        for profile in df.get("vnf-profile") or []:
            out[str(profile["id"])] = profile["vnfd-id"]
    return out


class Tunnel:
    """One NS relation = one WireGuard tunnel, named after the endpoint (= reference point)."""

    def __init__(self, name, provider, provider_endpoint, requirer, requirer_endpoint):
        self.name = name
        self.provider = provider
        self.provider_endpoint = provider_endpoint
        self.requirer = requirer
        self.requirer_endpoint = requirer_endpoint

    @property
    def refpoint(self):
        return self.provider_endpoint

    def __repr__(self):
        return "Tunnel({} {}:{} -> {}:{})".format(
            self.name, self.provider, self.provider_endpoint, self.requirer, self.requirer_endpoint
        )


def tunnels(nsd):
    """The NS relations, in the OSM 11+ form (provider/requirer) or the OSM 10 form (entities:
    first = provider, second = requirer, as LCM 11+ reads them)."""
    out = []
    for rel in (nsd.get("ns-configuration") or {}).get("relation") or []:
        if "provider" in rel and "requirer" in rel:
            p, r = rel["provider"], rel["requirer"]
            out.append(
                Tunnel(
                    rel.get("name"),
                    str(p.get("vnf-profile-id")),
                    p.get("endpoint"),
                    str(r.get("vnf-profile-id")),
                    r.get("endpoint"),
                )
            )
        elif len(rel.get("entities") or []) == 2:
            p, r = rel["entities"]
            out.append(
                Tunnel(
                    rel.get("name"), str(p.get("id")), p.get("endpoint"), str(r.get("id")), r.get("endpoint")
                )
            )
        else:
            raise CatalogError(
                "relation {!r}: neither provider/requirer nor two entities".format(rel.get("name"))
            )
    return out


def vdu_members(nsd):
    """{member: VDU id} of the relation ends that name a VDU-level execution environment
    (``vdu-profile-id``, OSM 11+): OSM addresses their primitives by VDU and count index."""
    out = {}
    for rel in (nsd.get("ns-configuration") or {}).get("relation") or []:
        for end in (rel.get("provider"), rel.get("requirer")):
            if isinstance(end, dict) and end.get("vdu-profile-id"):
                out[str(end["vnf-profile-id"])] = str(end["vdu-profile-id"])
    return out


# -- VNFD contents --------------------------------------------------------------------------


def vdu_resources(vnfd):
    """[(vdu id, vcpus, ram MiB, disk GB, image name)] from the VNFD's compute/storage/image descs."""
    computes = {c["id"]: c for c in vnfd.get("virtual-compute-desc") or []}
    storages = {s["id"]: s for s in vnfd.get("virtual-storage-desc") or []}
    images = {i["id"]: i for i in vnfd.get("sw-image-desc") or []}
    out = []
    for vdu in vnfd.get("vdu") or []:
        compute = computes.get(vdu.get("virtual-compute-desc"))
        if compute is None:
            raise CatalogError(
                "VNFD {} VDU {}: virtual-compute-desc not found".format(vnfd.get("id"), vdu["id"])
            )
        vcpus = int(compute["virtual-cpu"]["num-virtual-cpu"])
        ram_mb = int(round(float(compute["virtual-memory"]["size"]) * 1024))  # the VNFD gives GB
        storage_ids = vdu.get("virtual-storage-desc") or []
        if isinstance(storage_ids, str):
            storage_ids = [storage_ids]
        disk = sum(int(storages[s]["size-of-storage"]) for s in storage_ids if s in storages)
        image = images.get(vdu.get("sw-image-desc"), {})
        out.append((vdu["id"], vcpus, ram_mb, disk, image.get("image") or image.get("name")))
    return out
