"""The demo's report (testbed/measurement/report.py): only the NS's reference points in the table and the
picture, and the picture's timeline of handshake ages and the stale alert from Prometheus."""
import json

import measure_parse as mp

from bundle import membership
from testbed.measurement import report

SA = membership.of_variant("sa_wg")[1]


def _report():
    entry = mp.interface_entry(handshake=True, wg_iperf={"throughput_bps": 9e8}, plain_iperf={"throughput_bps": 2e9},
                               wg_ping={"rtt_avg_ms": 0.4, "rtt_min_ms": 0.3, "rtt_max_ms": 0.6},
                               plain_ping={"rtt_avg_ms": 0.1, "rtt_min_ms": 0.1, "rtt_max_ms": 0.2})
    rep = mp.build_report({"n2": entry, "n3": entry}, refpoints=SA, ns="sa_wg")
    ages = {"amf wg-n2 gnb/0": [[t, t % 120] for t in range(0, 300, 2)],
            "gnb wg-n2 amf/0": [[t, (t + 40) % 120 if t < 150 else t - 110] for t in range(0, 300, 2)]}
    alerts = {"gnb amf/0 pending": [[t, 1] for t in range(200, 210, 2)],
              "gnb amf/0 firing": [[t, 1] for t in range(210, 250, 2)]}
    rep["prometheus"] = {"threshold_seconds": 30, "alert_for": "10s",
                         "stopped": {"unit": "amf/0", "at": 1150.0, "repaired_at": 1250.0},
                         "timeline": {"step": 2, "start": 1000.0, "seconds": 300, "ages": ages, "alerts": alerts}}
    return rep


def test_the_report_and_picture_name_only_the_ns_reference_points(tmp_path):
    rep = _report()
    text = report.table(rep)
    assert "n2" in text and "n3" in text and "s6a" not in text and "s1u" not in text
    path, pngs = report.write(rep, str(tmp_path))
    with open(path) as f:
        assert set(json.load(f)["reference_points"]) == set(SA)   # sorted keys
    (png,) = pngs
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_without_a_timeline_the_picture_is_the_bars_alone(tmp_path):
    rep = _report()
    del rep["prometheus"]["timeline"]
    _path, (png,) = report.write(rep, str(tmp_path))
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
