"""The conformance report: one line per package and params file, and whether the run passed."""

import os

OSM10_SUFFIX = "-osm10"


def expected(flavour, result):
    """Must this result be ok? On newest OSM everything; on OSM 10 whatever is built for OSM 10
    (`-osm10` VNFDs, NSDs, NSTs and their params). The other VNFDs carry `exporters-endpoints`,
    which OSM 10's IM does not have."""
    if flavour != "osm10":
        return True
    name = result["name"]
    if result["section"] == "package":
        return (OSM10_SUFFIX + "_") in name
    return name.endswith(OSM10_SUFFIX)


def read_commits(path):
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def render(flavour, results, commits=(), notes=()):
    """(text, ok): ok is False when an expected result failed."""
    lines = ["== osm-conformance with the {} IM".format(flavour)]
    lines += ["   source: " + c for c in commits]
    lines += ["   note: " + n for n in notes]
    counts = {"ok": 0, "FAIL": 0, "refused (not for this OSM)": 0}
    for section in ("package", "params", "lcm"):
        for r in [r for r in results if r["section"] == section]:
            must = expected(flavour, r)
            if r["ok"]:
                status = "ok"
            elif must:
                status = "FAIL"
            else:
                status = "refused (not for this OSM)"
            counts[status] += 1
            line = "{:<5} {:<8} {}".format("ok" if r["ok"] else ("FAIL" if must else "info"), section, r["name"])
            if not r["ok"]:
                first, _, rest = r["message"].partition("\n")
                line += "\n        " + first
                if status == "FAIL" and rest:
                    line += "\n        " + rest.replace("\n", "\n        ")
            lines.append(line)
    lines.append(
        "   {}: {} ok, {} failed, {} refused as expected".format(
            flavour, counts["ok"], counts["FAIL"], counts["refused (not for this OSM)"]
        )
    )
    return "\n".join(lines), counts["FAIL"] == 0
