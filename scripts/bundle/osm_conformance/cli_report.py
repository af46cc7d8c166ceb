"""The report of the command-line check: per client, and per variant, how many of the deploy
tool's command lines its own parser took and which it refused (with its message)."""

#: Programs whose command lines no parser here reads (named in the report, never counted as parsed).
UNCHECKED = {"juju": "Juju's CLI is Go: its command lines are parsed only when a Juju source tree is given "
                     "(make osm-conformance ... JUJU_SRC=<dir>, or make juju-conformance JUJU_SRC=<dir>)"}
#: Programs a parser here reads, each in its own part.
PARSED_BY = {"osm": "osmclient's click trees (part cli, OSM_SRC)",
             "openstack": "python-openstackclient (part cli, OSM_SRC)",
             "juju": "Juju's own command parsing (JUJU_SRC)"}
#: (client label, command) that an older client does not have, with why the refusal is expected:
#: only when every variant that sends it is built for the newer OSM (no `-osm10` variant).
NEWER_COMMANDS = {
    ("v8", "ns-update"): "osmclient v8 has no ns-update; `deploy upgrade` sends it only for the variants for "
                         "OSM 14+ (an -osm10 variant upgrades through Juju)",
}


def expected_refusal(label, item, result):
    """Whether a refusal is a newer command refused by an older osmclient, sent only by variants
    for the newer OSM."""
    return ((label, item["argv"][0]) in NEWER_COMMANDS and "no such command" in result["message"].lower()
            and not any(variant_of(w).endswith("_osm10") for w in item["where"]))


def variant_of(where):
    return where.split(" ", 1)[0]


def _client_lines(label, program, doc, commands):
    """(lines, ok) of one parser's results."""
    expected = [x for x in doc["results"] if not x["ok"] and expected_refusal(label, commands[x["index"]], x)]
    rejected = [x for x in doc["results"] if not x["ok"] and x not in expected]
    bodies = [x for x in doc["results"] if "body_ok" in x]
    bad_bodies = [x for x in bodies if not x["body_ok"]]
    about = ", ".join("{} {}".format(k, v) for k, v in sorted(doc.get("versions", {}).items())) or \
        "click {}, {}".format(doc.get("click"), doc.get("tree"))
    lines = ["   {} {}: {} parsed, {} rejected{} ({})".format(
        doc["client"], label, len(doc["results"]) - len(rejected) - len(expected), len(rejected),
        ", {} refused as expected".format(len(expected)) if expected else "", about)]
    for (who, command), why in sorted(NEWER_COMMANDS.items()):
        if who == label and any(commands[x["index"]]["argv"][0] == command for x in expected):
            lines.append("      refused as expected: {}: {}".format(command, why))
    if doc.get("substituted"):
        lines.append("      {} of them printed by dry runs with <placeholders>, parsed with the largest names our "
                     "grammar accepts in their place".format(doc["substituted"]))
    if "controls" in doc:
        wrong = [c for c in doc["controls"] if c["ok"]]
        lines.append("      controls (lines the parser must refuse): {} refused, {} accepted{}".format(
            len(doc["controls"]) - len(wrong), len(wrong), "" if doc["controls"] else " (none ran: FAIL)"))
        for c in wrong:
            lines.append("      CONTROL ACCEPTED {} {}".format(program, " ".join(c["argv"])[:300]))
    if bodies:
        lines.append("      request bodies (the command run with osmclient's own client, judged by NBI's schema): "
                     "{} made, {} refused".format(len(bodies), len(bad_bodies)))
    for x in rejected[:40]:
        item = commands[x["index"]]
        lines.append("      REJECTED {} {}\n         {}\n         from: {}".format(
            program, " ".join(item["argv"])[:300], x["message"], "; ".join(item["where"][:4])))
    for x in bad_bodies[:40]:
        item = commands[x["index"]]
        lines.append("      BODY REFUSED {} {}\n         {}\n         from: {}".format(
            program, " ".join(item["argv"])[:300], x["body_message"], "; ".join(item["where"][:4])))
    controls_ok = "controls" not in doc or (bool(doc["controls"]) and not any(c["ok"] for c in doc["controls"]))
    return lines, bool(doc["results"]) and not rejected and not bad_bodies and controls_ok


def render(corpus, results, commits=()):
    """(text, ok). ``results``: [(label, program, result document of cli_parse)]. ok is False
    when any parser refused any command line, a corpus run failed, or a parser read nothing."""
    commands, runs = corpus["commands"], corpus["runs"]
    by_program = {}
    for c in commands:
        by_program[c["program"]] = by_program.get(c["program"], 0) + 1
    lines = ["== osm-conformance: the command lines of `python -m deploy` through the clients' own parsers"]
    lines += ["   source: " + c for c in commits]
    lines.append("   corpus: {} distinct command lines from {} runs ({} dry runs, {} live runs against the "
                 "stand-in clouds): {}".format(
                     len(commands), len(runs), sum(1 for r in runs if r["mode"] == "dry run"),
                     sum(1 for r in runs if r["mode"] == "live"),
                     ", ".join("{} {}".format(p, n) for p, n in sorted(by_program.items()))))
    ok = bool(results)
    for r in runs:
        if r["exit"] != 0:
            ok = False
            lines.append("   FAIL  corpus run {} {} ({}) exited {}: {}".format(
                r["variant"], " ".join(r["argv"]), r["mode"], r["exit"], r["error"][-300:]))
    for label, program, doc in results:
        more, fine = _client_lines(label, program, doc, commands)
        lines += more
        ok = ok and fine
    lines.append("   per variant (distinct command lines of its runs: parsed / rejected, by each parser; a newer "
                 "command an older client lacks is neither):")
    for variant in sorted({variant_of(w) for c in commands for w in c["where"]}):
        cells = []
        for label, _program, doc in results:
            mine = [x for x in doc["results"] if any(variant_of(w) == variant for w in commands[x["index"]]["where"])]
            refused = [x for x in mine if not x["ok"] and not expected_refusal(label, commands[x["index"]], x)]
            cells.append("{} {}: {}/{}".format(doc["client"], label, sum(1 for x in mine if x["ok"]), len(refused)))
        lines.append("     {:24} {}".format(variant, "; ".join(cells)))
    parsed = {program for _label, program, _doc in results}
    for program in sorted(set(by_program) & set(PARSED_BY) - parsed):
        why = UNCHECKED.get(program) or "this run did not include {}".format(PARSED_BY[program])
        lines.append("   not parsed: {} {} command lines: {}".format(by_program[program], program, why))
    unknown = sorted(set(by_program) - set(PARSED_BY))
    if unknown:
        ok = False
        lines.append("   FAIL  command lines for programs no parser here knows: {}".format(", ".join(unknown)))
    lines.append("   command lines: {}".format("0 rejected" if ok else "FAILED"))
    return "\n".join(lines), ok
