"""Compile an OAI CN5G network function's own configuration reader (its YAML classes, with just
enough of its tree to link) together with our driver (readers/<nf>.cpp), for `make oai-conformance`.

The sources come from OAI_SRC, never from this project: the reader's tree is extracted into the
build folder. Which files are needed is found the way a linker finds them: start from the
reader's own files (``SEEDS``), link, and for every undefined symbol add the file that defines its
class (``<Class>.cpp`` in the tree, the one beside the header the compiler includes), until it
links. yaml-cpp, spdlog, fmt, nlohmann-json, boost and libconfig++ are the system's (``pkg-config``
names them; docs/cn5g.md says which versions), or yaml-cpp from an install prefix
(``--yaml-cpp``, e.g. 0.8.0 as OAI's build helper installs it). Objects are kept between runs
(keyed by the file's content and the flags), so a second run only links.
"""
import concurrent.futures
import hashlib
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVERS = os.path.join(HERE, "readers")
#: The reader's own files per NF: its YAML classes, its config structure, the common config code
#: and the utilities they call by free function (those are not found by class name).
SEEDS = {
    "upf": ["src/upf_app/app/upf_config_yaml.cpp", "src/upf_app/app/upf_config.cpp"],
    "smf": ["src/smf_app/smf_config.cpp", "src/smf_app/smf_config_types.cpp"],
    "amf": ["src/amf-app/amf_config_yaml.cpp", "src/amf-app/amf_config.cpp"],
}
COMMON_SEEDS = ["config/config.cpp", "config/config_types.cpp", "logger/logger_base.cpp"]
UTIL_SEEDS = ["src/common/utils/conversions.cpp", "src/common/utils/fqdn.cpp", "src/common/utils/if.cpp",
              "src/common/utils/string.cpp", "src/common/logger.cpp"]
#: Folders never compiled or searched: kernel (eBPF) programs, tests, other programs.
SKIP = re.compile(r"(^|/)(bpf|test|tests|bar_implementation|ci-scripts|docs?|build|\.git)(/|$)")
LIBS = ["-lyaml-cpp", "-lspdlog", "-lfmt", "-lconfig++", "-lpthread"]
MAX_ROUNDS = 40


class BuildError(Exception):
    pass


def common_src(tree):
    """The folder of the common-src submodule inside an NF tree (its name differs between NFs)."""
    for name in ("src/common-src", "src/oai-cn5g-common-src"):
        if os.path.isfile(os.path.join(tree, name, "config", "config.cpp")):
            return name
    raise BuildError("{}: no common-src submodule with config/config.cpp (src/common-src or "
                     "src/oai-cn5g-common-src)".format(tree))


def include_dirs(tree):
    """Every source folder of the tree, in a fixed order, as the NF's CMake lists them."""
    out = []
    for root, dirs, files in os.walk(os.path.join(tree, "src")):
        dirs[:] = sorted(d for d in dirs if not SKIP.search(os.path.relpath(os.path.join(root, d), tree)))
        if any(f.endswith((".h", ".hpp")) for f in files):
            out.append(root)
    return out


def index_sources(tree):
    """{basename without .cpp/.c, lower case: [paths]} of the tree's sources outside the skipped folders."""
    out = {}
    for root, dirs, files in os.walk(os.path.join(tree, "src")):
        dirs[:] = [d for d in dirs if not SKIP.search(os.path.relpath(os.path.join(root, d), tree))]
        for f in files:
            if f.endswith((".cpp", ".c")):
                out.setdefault(f.rsplit(".", 1)[0].lower(), []).append(os.path.join(root, f))
    return out


UNDEFINED = re.compile(r"undefined reference to `([^']+)'")


def wanted_names(symbol):
    """Class names whose ``<Name>.cpp`` may define ``symbol`` (a demangled C++ name)."""
    names = re.findall(r"(?:vtable|typeinfo|VTT) for (?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)", symbol)
    head = symbol.split("(", 1)[0]
    parts = head.split("::")
    # Class::method first, then the function and its namespaces (helpers::f in Helpers.cpp).
    names += parts[-2::-1][:1] + parts[-1:] + parts[-3::-1]
    args = symbol[len(head):]
    names += re.findall(r"(?:[A-Za-z_]\w*::)+([A-Za-z_]\w*)(?: const)?&", args)
    return [n for n in names if n]


def pick(candidates, includes):
    """Of several ``Name.cpp``, the one beside the header the compiler finds first."""
    if len(candidates) == 1:
        return candidates[0]
    for folder in includes:
        for path in candidates:
            if os.path.dirname(path) == folder:
                return path
    return sorted(candidates)[0]


class Builder(object):
    def __init__(self, tree, out_dir, jobs=2, yaml_cpp=None):
        self.tree = tree
        self.out_dir = out_dir
        self.jobs = jobs
        self.yaml_cpp = yaml_cpp
        prefix = [os.path.join(yaml_cpp, "include")] if yaml_cpp else []
        self.includes = prefix + [os.path.join(DRIVERS, "shim")] + include_dirs(tree)
        self.index = index_sources(tree)
        os.makedirs(os.path.join(out_dir, "obj"), exist_ok=True)

    def libs(self):
        if not self.yaml_cpp:
            return LIBS
        lib = os.path.join(self.yaml_cpp, "lib")
        return ["-L" + lib, "-Wl,-rpath," + lib] + LIBS

    def flags(self):
        return (["-std=c++17", "-O0", "-w", "-DPACKAGE_VERSION=\"conformance\"", "-DPACKAGE_NAME=\"oai\""]
                + ["-I" + d for d in self.includes])

    def object_of(self, source):
        with open(source, "rb") as f:
            digest = hashlib.sha256(f.read() + " ".join(self.flags()).encode()).hexdigest()[:16]
        return os.path.join(self.out_dir, "obj", "{}-{}.o".format(os.path.basename(source)[:-4], digest))

    def compile(self, sources):
        def one(source):
            obj = self.object_of(source)
            if os.path.exists(obj):
                return obj, None
            compiler = ["gcc", "-x", "c"] if source.endswith(".c") else ["g++"]
            flags = [f for f in self.flags() if not f.startswith("-std=")]
            result = subprocess.run(compiler + ["-c", source, "-o", obj + ".tmp"] + flags
                                    + (["-std=c++17"] if compiler == ["g++"] else []),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                return None, "{}: {}".format(os.path.relpath(source, self.tree),
                                             result.stdout.decode("utf-8", "replace")[-3000:])
            os.rename(obj + ".tmp", obj)
            return obj, None

        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            results = list(pool.map(one, sources))
        errors = [e for _, e in results if e]
        if errors:
            raise BuildError("compiling OAI's source failed:\n" + "\n".join(errors))
        return [o for o, _ in results]

    def defining_file(self, symbol):
        """The source that defines ``symbol``: ``<Class>.cpp`` by name (the exact spelling first: a
        C++ symbol is not in nas/ies/SNSSAI.c), else (a C function or variable such as
        free_wrapper) the file whose line starts a definition of it."""
        symbol = re.sub(r"\[abi:\w+\]", "", symbol)
        cpp = "::" in symbol
        for name in wanted_names(symbol):
            found = [p for p in self.index.get(name.lower(), []) if not cpp or p.endswith(".cpp")]
            exact = [p for p in found if os.path.basename(p).rsplit(".", 1)[0] == name]
            if exact or found:
                return pick(exact or found, self.includes)
        name = re.escape(symbol.split("(", 1)[0].split("::")[-1])
        definition = re.compile(r"^(?!extern\b)[A-Za-z_][^;()=]*\b{0}\s*(\([^;]*|=[^=].*;|;)$".format(name), re.M)
        found = []
        for paths in self.index.values():
            for path in paths:
                with open(path, errors="replace") as f:
                    if definition.search(f.read()):
                        found.append(path)
        return pick(found, self.includes) if found else None

    def link(self, driver, sources, binary):
        """Compile and link until every symbol is defined; returns the sources it took."""
        sources = list(dict.fromkeys(sources))
        for _round in range(MAX_ROUNDS):
            objects = self.compile([driver] + sources)
            result = subprocess.run(["g++", "-o", binary] + objects + self.libs(),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if result.returncode == 0:
                return sources
            text = result.stdout.decode("utf-8", "replace")
            missing = sorted(set(UNDEFINED.findall(text)))
            if not missing:
                raise BuildError("linking failed:\n" + text[-3000:])
            added = []
            for symbol in missing:
                path = self.defining_file(symbol)
                if path and path not in sources and path not in added:
                    added.append(path)
            if not added:
                raise BuildError("no source of the tree defines: " + "; ".join(missing[:15]))
            sources += added
        raise BuildError("still undefined symbols after {} rounds".format(MAX_ROUNDS))


def yaml_cpp_version(prefix=None):
    """The version of the yaml-cpp the readers link (pkg-config's, or the prefix's)."""
    env = dict(os.environ)
    if prefix:
        env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
    result = subprocess.run(["pkg-config", "--modversion", "yaml-cpp"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    return result.stdout.decode().strip() or "unknown"


def build_reader(nf, tree, out_dir, yaml_cpp=None):
    """Build ``<out_dir>/<nf>-reader`` from ``tree`` (the NF's files, common-src included)."""
    common = common_src(tree)
    seeds = [os.path.join(tree, p) for p in SEEDS[nf] + UTIL_SEEDS + [common + "/" + c for c in COMMON_SEEDS]]
    seeds = [s for s in seeds if os.path.exists(s)]
    builder = Builder(tree, out_dir, yaml_cpp=yaml_cpp)
    binary = os.path.join(out_dir, "{}-reader".format(nf))
    used = builder.link(os.path.join(DRIVERS, nf + ".cpp"), seeds, binary)
    return binary, [os.path.relpath(s, tree) for s in used]
