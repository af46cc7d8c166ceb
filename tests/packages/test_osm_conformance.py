"""The parts of `make osm-conformance` that need no OSM sources: the refusal to run without them,
the osmclient request harness and the report."""

import json
import os
import subprocess
import sys

from bundle.osm_conformance import osmclient_body, report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _conformance(*args, env_extra=None):
    # as make runs it: bundle.params reads the 5QI table of vpnaas.core.qos
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "scripts"), os.path.join(ROOT, "charms")]))
    env.pop("OSM_SRC", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "bundle.osm_conformance", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def test_without_osm_src_it_says_not_run_and_fails():
    done = _conformance()
    assert done.returncode == 2
    assert done.stdout.startswith("not run: no OSM sources")


def test_an_incomplete_layout_names_what_is_missing(tmp_path):
    (tmp_path / "NBI").mkdir()
    done = _conformance("--osm-src", str(tmp_path))
    assert done.returncode == 2
    assert "not run: no OSM sources" in done.stdout
    assert "IM, IM-osm10, SOL006, osm-common, osmclient, osmclient-newest, openstack-requirements" in done.stdout


class StubNsi:
    """The shape of osmclient's Nsi: looks names up through the client, posts through http."""

    def __init__(self, http=None, client=None):
        self._http, self._client = http, client

    def create(self, nst_name, nsi_name, account, config=None):
        import yaml

        nst = self._client.nst.get(nst_name)
        vim = self._client.vim.get(account)["_id"]
        body = {"nstId": nst["_id"], "nsiName": nsi_name, "vimAccountId": vim}
        cfg = yaml.safe_load(config)
        for sub in cfg.get("netslice-subnet", []):
            for vnf in sub.get("vnf", []):
                vnf["vimAccountId"] = self._client.vim.get(vnf.pop("vim_account"))["_id"]
        body.update(cfg)
        self._http.set_http_header([])
        code, resp = self._http.post_cmd(endpoint="/nsilcm/v1/netslice_instances_content", postfields_dict=body)
        assert code == 201 and json.loads(resp)["id"]
        return json.loads(resp)["id"]


def test_request_body_records_what_osmclient_posts_and_which_names_it_resolved():
    config = {"netslice-subnet": [{"id": "eps-wg", "vnf": [{"member-vnf-index": "hss", "vim_account": "site2"}]}]}
    body, seen = osmclient_body.request_body(StubNsi, "nsi", "oai-eps-wg-embb", "n1", "site1", config)
    assert body["nstId"] == osmclient_body.fake_id("nst", "oai-eps-wg-embb")
    assert body["vimAccountId"] == osmclient_body.fake_id("vim", "site1")
    assert body["netslice-subnet"][0]["vnf"][0] == {
        "member-vnf-index": "hss",
        "vimAccountId": osmclient_body.fake_id("vim", "site2"),
    }
    assert seen == {"nst": ["oai-eps-wg-embb"], "vim": ["site1", "site2"]}
    assert config["netslice-subnet"][0]["vnf"][0]["vim_account"] == "site2"  # the caller's dict is untouched


def _r(section, name, ok, message="m"):
    return {"section": section, "name": name, "ok": ok, "message": message}


def test_report_fails_on_newest_for_any_refusal():
    results = [_r("package", "a_vnf.tar.gz", True), _r("package", "b_ns.tar.gz", False, "bad\ntrace")]
    text, ok = report.render("newest", results)
    assert not ok
    assert "FAIL  package  b_ns.tar.gz\n        bad\n        trace" in text
    assert "newest: 1 ok, 1 failed, 0 refused as expected" in text


def test_report_on_osm10_expects_only_osm10_builds():
    results = [
        _r("package", "oai-hss-osm10_vnf.tar.gz", True),
        _r("package", "oai-hss_vnf.tar.gz", False, "Invalid attribute specified (exporters-endpoints)"),
        _r("package", "oai-eps-wg_ns.tar.gz", False, "Invalid attribute specified (provider)"),
        _r("package", "oai-eps-wg-osm10_ns.tar.gz", True),
        _r("params", "params/eps_wg.yaml -> ns oai-eps-wg", False, "not onboarded"),
        _r("params", "params/eps_wg.yaml -> ns oai-eps-wg-osm10", True),
    ]
    text, ok = report.render("osm10", results, ["NBI abc"], ["a note"])
    assert ok
    assert "source: NBI abc" in text and "note: a note" in text
    assert "info  package  oai-eps-wg_ns.tar.gz" in text
    assert "osm10: 3 ok, 0 failed, 3 refused as expected" in text
    _, ok = report.render("osm10", results + [_r("package", "oai-eps-wg-osm10_ns.tar.gz", False)])
    assert not ok
    _, ok = report.render("osm10", results + [_r("package", "oai-mme-osm10_vnf.tar.gz", False)])
    assert not ok


def test_prepare_osm_src_exports_the_layout_and_records_commits(tmp_path):
    """prepare-osm-src.sh on a throw-away repository: every folder, the sub-folder form, COMMITS."""
    repo = tmp_path / "repo"
    (repo / "NBI" / "osm_nbi").mkdir(parents=True)
    (repo / "NBI" / "osm_nbi" / "x.py").write_text("first\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    first = subprocess.run(git + ["rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    (repo / "NBI" / "osm_nbi" / "x.py").write_text("second\n")
    subprocess.run(git + ["commit", "-qam", "two"], check=True)
    out = tmp_path / "osm-src"
    script = os.path.join(ROOT, "scripts", "bundle", "osm_conformance", "prepare-osm-src.sh")
    specs = ["{}@{}:NBI".format(repo, first)] + [str(repo)] * 7
    subprocess.run(["bash", script, str(out)] + specs, check=True, stdout=subprocess.PIPE)
    assert (out / "NBI" / "osm_nbi" / "x.py").read_text() == "first\n"  # the ref and the folder
    for name in ("IM", "IM-osm10", "SOL006", "osm-common", "osmclient", "osmclient-newest", "openstack-requirements"):
        assert (out / name / "NBI" / "osm_nbi" / "x.py").read_text() == "second\n"
    commits = report.read_commits(str(out / "COMMITS"))
    assert commits[0].startswith("NBI {} ".format(first)) and commits[0].endswith("(folder NBI)")
    assert [c.split()[0] for c in commits] == ["NBI", "IM", "IM-osm10", "SOL006", "osm-common", "osmclient",
                                               "osmclient-newest", "openstack-requirements"]
    done = subprocess.run(["bash", script, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and "prepare-osm-src.sh OSM_SRC" in done.stderr
