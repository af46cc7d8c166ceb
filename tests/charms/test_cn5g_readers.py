"""The machinery of `make oai-conformance` that executes the CN5G NFs' own configuration readers
and MySQL's init-file reader (scripts/oai_conformance/nfbuild.py, nfreader.py, expect.py,
cases.py, mysqlinit.py), on small trees and stand-in readers made here: no OAI or MySQL code."""
import json
import os
import subprocess

import pytest
from charms_helpers import COMPONENTS, config_for
from oai_conformance import __main__ as conformance
from oai_conformance import cases, expect, layout, mysqlinit, nfbuild, nfreader


def test_an_undefined_symbol_names_the_file_of_its_class():
    assert nfbuild.wanted_names("oai::model::common::Snssai::Snssai()")[0] == "Snssai"
    assert nfbuild.wanted_names("vtable for oai::model::common::PduSessionType")[0] == "PduSessionType"
    names = nfbuild.wanted_names("oai::model::common::helpers::validate_regex(std::string const&)")
    assert "helpers" in names
    # a free function over a model type: the type's file defines it
    assert "Tai" in nfbuild.wanted_names("oai::model::common::to_json(nlohmann::json&, oai::model::common::Tai const&)")


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "w") as f:
        f.write(text)


@pytest.fixture
def tree(tmp_path):
    """A tiny NF-like tree: a C++ class, a C file whose name differs only in case, C helpers."""
    root = tmp_path / "nf"
    write(root / "src" / "model" / "Snssai.h", "#pragma once\nnamespace m { struct Snssai { int sst() const; }; }\n")
    write(root / "src" / "model" / "Snssai.cpp", '#include "Snssai.h"\nint m::Snssai::sst() const { return 7; }\n')
    write(root / "src" / "nas" / "SNSSAI.c", "int encode_snssai(int x) { return x; }\n")
    write(root / "src" / "util" / "helpers.h", "#pragma once\nextern int counter;\nint bump(void);\n")
    write(root / "src" / "util" / "helpers.c", '#include "helpers.h"\nint counter = 1;\nint bump(void) {\n'
                                                "  return ++counter;\n}\n")
    write(root / "src" / "util" / "other.c", '#include "helpers.h"\nextern int counter;\n')
    write(root / "src" / "bpf" / "Snssai.cpp", "this is never compiled\n")
    return root


def test_the_defining_file_prefers_the_exact_class_file_and_finds_c_definitions(tree):
    b = nfbuild.Builder(str(tree), str(tree.parent / "out"))
    assert b.defining_file("m::Snssai::sst() const").endswith("src/model/Snssai.cpp")
    assert b.defining_file("bump").endswith("src/util/helpers.c")
    assert b.defining_file("counter").endswith("src/util/helpers.c")   # not the extern declaration
    assert b.defining_file("nothing_defines_this") is None
    assert not any("/bpf/" in p for paths in b.index.values() for p in paths)


def test_the_builder_links_by_adding_what_is_undefined(tree, tmp_path):
    driver = tmp_path / "driver.cpp"
    write(driver, '#include "Snssai.h"\nextern "C" int bump(void);\n'
                  "int main() { return m::Snssai().sst() + bump() == 9 ? 0 : 1; }\n")
    write(tree / "src" / "util" / "helpers.h", '#pragma once\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
                                               'extern int counter;\nint bump(void);\n#ifdef __cplusplus\n}\n#endif\n')
    b = nfbuild.Builder(str(tree), str(tmp_path / "out"))
    used = b.link(str(driver), [], str(tmp_path / "reader"))
    assert sorted(os.path.relpath(p, str(tree)) for p in used) == ["src/model/Snssai.cpp", "src/util/helpers.c"]
    assert subprocess.run([str(tmp_path / "reader")]).returncode == 0
    # a second build compiles nothing again (objects are kept by content)
    before = sorted(os.listdir(str(tmp_path / "out" / "obj")))
    b.link(str(driver), used, str(tmp_path / "reader"))
    assert sorted(os.listdir(str(tmp_path / "out" / "obj"))) == before


def test_a_logged_exception_is_a_problem_and_the_cited_benign_warning_is_not():
    out = ("[config ] [info] Reading NF configuration from f\n"
           "[config ] [warning] Could not parse upf: yaml-cpp: operator[] call on a scalar (key: \"host\")\n"
           "[config ] [warning] " + nfreader.BENIGN[0] + ", we use the same values for all UPFs.\n"
           'VIEW {"a": 1}\n')
    assert nfreader.problems_in(out) == [out.splitlines()[1]]
    assert nfreader.view_of(out) == {"a": 1}
    assert nfreader.redact("password: s3cret-value", ["s3cret-value"]) == "password: <redacted>"


def upf_view(v, **changes):
    at = v.addresses
    view = {"smfs": [at.peers["n4"]], "n3": {"addr4": at.ip("n3"), "port": 2152}, "n4": {"addr4": at.ip("n4")},
            "sbi": {"addr4": at.ip("n4")}, "n6": {"if_name": "lo"}, "register_nrf": False, "http_version": 1,
            "enable_snat": False, "enable_bpf_datapath": False, "pdns": [v.session.pool], "dnns": [v.session.dnn],
            "snssai_upf_info_list": [{"sst": v.slice.sst, "sd": 0xFFFFFF, "dnns": [v.session.dnn]}]}
    view.update(changes)
    return view


def test_each_value_the_upf_lost_is_named():
    v = COMPONENTS["upf"].config_values(config_for("upf"), None)
    assert [w for w, got, want in expect.upf(v, upf_view(v)) if got != want] == []
    # what the UPF of the issue reported: no SMF, upf_info back to its default, no DNN served
    lost = upf_view(v, smfs=[], dnns=[], snssai_upf_info_list=[{"sst": 1, "sd": 0xFFFFFF, "dnns": ["default"]}])
    wrong = [w for w, got, want in expect.upf(v, lost) if got != want]
    assert wrong == ["smfs (the SMF it associates with over PFCP)",
                     "DNNs it serves (a DNN missing from upf_info is dropped)", "upf_info DNNs"]


def test_a_reader_runs_in_its_own_namespace_with_the_labelled_addresses(tmp_path, capsys):
    """check_case with a stand-in reader that prints the addresses its namespace has and a view."""
    comp = COMPONENTS["upf"]
    v = comp.config_values(config_for("upf"), None)
    fake = tmp_path / "reader"
    view = json.dumps(upf_view(v))
    write(fake, "#!/bin/sh\nip -o -4 addr show dev lo\ngrep -q 'lo:vpnaas-n3' \"$1\" || exit 3\n"
                "echo 'VIEW {}'\n".format(view))
    os.chmod(str(fake), 0o755)
    status, output = nfreader.run_reader(str(fake), comp.render_spec(v)["files"][0]["content"].replace(
        "@N3_IF@", "lo:vpnaas-n3"), [("lo:vpnaas-n3", v.addresses.ip("n3")), ("lo:vpnaas-n4", v.addresses.ip("n4"))])
    assert status == 0, output
    assert "{}/32 scope global lo:vpnaas-n3".format(v.addresses.ip("n3")) in output and "lo:vpnaas-n4" in output
    report = conformance.Report()
    nfreader.check_case(report, "upf", comp, str(fake), config_for("upf"), "test", conformance.load_renderer(), [])
    assert report.mismatches == 0 and "upf reader, test: read without an exception" in capsys.readouterr().out
    write(fake, "#!/bin/sh\necho '[config ] [warning] Could not parse upf: boom'\necho 'VIEW {}'\n".format(view))
    nfreader.check_case(report, "upf", comp, str(fake), config_for("upf"), "test", conformance.load_renderer(), [])
    assert report.mismatches == 1 and "Could not parse upf: boom" in capsys.readouterr().out


def test_the_cases_cover_every_5g_params_file_and_the_largest_values():
    labels = [label for label, _ in cases.all_cases(("amf", "smf", "upf", "mysql"))]
    assert labels[0] == "conformance params" and labels[-1] == "largest accepted values"
    assert {"params sa (sa)", "params sa_wg (sa_wg)", "params sa_slices (embb)", "params sa_slices (urllc)"} <= set(
        labels)
    for label, configs in cases.all_cases(("amf", "smf", "upf", "mysql")):
        assert set(configs) == {"amf", "smf", "upf", "mysql"}, label
        for name, config in configs.items():
            COMPONENTS[name].config_values(config, None)     # the grammar accepts every case
    biggest = cases.maximal("mysql")
    assert biggest["number-of-users"] == 10000 and len(cases.maximal("smf")["dnn"]) == 62


def test_mysql_reader_without_mysqls_source_is_not_checked(tmp_path, capsys):
    report = conformance.Report()
    mysqlinit.check(report, COMPONENTS["mysql"], None, str(tmp_path), str(tmp_path / "work"))
    assert report.unchecked and "MySQL's init-file reader NOT RUN" in capsys.readouterr().out
    write(tmp_path / "sql" / "sql_bootstrap.h", "#define MAX_BOOTSTRAP_QUERY_SIZE 74000\n")
    assert mysqlinit.limit_of(str(tmp_path)) == 74000


def test_a_stand_in_reader_tree_is_laid_out_with_its_commit(tmp_path):
    repo = tmp_path / "copy"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo / "component" / "oai-upf" / "README", "x\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"],
                   check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], stdout=subprocess.PIPE).stdout.decode().strip()
    layout.layout(str(tmp_path / "out"), ["reader:upf={}@{}:component/oai-upf".format(repo, head[:8])])
    with open(str(tmp_path / "out" / "readers" / "upf.source")) as f:
        assert f.read().split()[1:] == [head, "component/oai-upf"]
    tree, why = nfreader.reader_tree("upf", str(tmp_path / "out"), str(tmp_path / "work"))
    assert tree is None and "common-src" in why        # the copy has no common-src
    assert os.path.exists(str(tmp_path / "work" / "upf-{}".format(head[:12]) / "README"))
