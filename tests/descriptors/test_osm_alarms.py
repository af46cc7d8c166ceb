"""OSM's own alarm on the tunnels (docs/metrics.md "In OSM"): every VNFD that has the exporter's
scrape job (df exporters-endpoints, OSM 14+) carries a VDU alarm whose monitoring parameter's
performance-metric is, with LCM's osm_ prefix, the name the package's scrape job stores the
exporter's session state under; its <OSM> reaches the charm (osm-instance), which labels the
series with OSM's ns_id, vnf_member_index and vdu_id; the -osm10 variants carry none of it."""
import os
import re

from descriptors_helpers import day12

from bundle import ROOT

TEMPLATE = os.path.join(ROOT, "monitoring", "exporter-endpoint", "prometheus.j2")


def _stored_name():
    with open(TEMPLATE) as f:
        return re.search(r"replacement: (osm_\w+)", f.read()).group(1)


def test_every_scraped_vnfd_alarms_on_the_session_state_osm_stores(bundle):
    checked = 0
    for desc in bundle.vnfs:
        vnfd = desc.body
        scraped = "exporters-endpoints" in vnfd["df"][0]
        (vdu,) = vnfd["vdu"]
        if not scraped:
            assert "alarm" not in vdu and "monitoring-parameter" not in vdu, desc.id
            continue
        params = {p["id"]: p for p in vdu["monitoring-parameter"]}
        (alarm,) = vdu["alarm"]
        metric = params[alarm["vnf-monitoring-param-ref"]]["performance-metric"]
        assert "osm_" + metric == _stored_name()
        assert (alarm["operation"], alarm["value"]) == ("LT", 1)
        values = [p["value"] for prim in day12(desc)["initial-config-primitive"] for p in prim.get("parameter", [])
                  if p["name"] == "osm-instance"]
        assert values == ["<OSM>"], desc.id
        checked += 1
    assert checked >= 10
    assert any(d.id.endswith("-osm10") for d in bundle.vnfs)
