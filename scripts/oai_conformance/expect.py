"""What each CN5G NF must have taken from the file the charm generated: its reader's view
(readers/<nf>.cpp prints it) against the charm's own values. A value missing from the view is a
section the reader dropped; each expectation says what it feeds in the NF."""
#: "No SD" (3GPP TS 23.003 §28.4.2): what the NFs report for a slice without a differentiator.
NO_SD = 0xFFFFFF


def _sd(value):
    """An SD as the readers report it (an int, or hex text) as an int; None when absent."""
    if value is None or value == "":
        return None
    return value if isinstance(value, int) else int(str(value), 16)


def _sd_or_none(value):
    """An SD a reader reports, "no SD" (FFFFFF) when it lists none."""
    sd = _sd(value)
    return NO_SD if sd is None else sd


def _want_sd(slice_):
    return int(slice_.sd, 16) if slice_.sd else NO_SD


def upf(v, view):
    """The UPF: its PFCP association target, its N3/N4 addresses (N3's is the address it puts in
    the F-TEIDs it chooses: pfcp_switch::generate_fteid_n3, which the SMF asks for since the UPF
    announces FTUP), its UpfInfo and the DNN it serves."""
    infos = view.get("snssai_upf_info_list") or [{}]
    return [
        ("smfs (the SMF it associates with over PFCP)", view.get("smfs"), [v.addresses.peers["n4"]]),
        ("N3 address (the F-TEID address the gNB sends GTP-U to)", view["n3"]["addr4"], v.addresses.ip("n3")),
        ("N3 port", view["n3"]["port"], 2152),
        ("N4 address (its PFCP node id)", view["n4"]["addr4"], v.addresses.ip("n4")),
        ("SBI address", view["sbi"]["addr4"], v.addresses.ip("n4")),
        ("N6 interface", view["n6"]["if_name"], "lo"),
        ("register_nf", view["register_nrf"], False),
        ("http_version", view["http_version"], 1),
        ("enable_snat", view["enable_snat"], False),
        ("enable_bpf_datapath", view["enable_bpf_datapath"], False),
        ("UE pool (pdns)", view.get("pdns"), [v.session.pool]),
        ("DNNs it serves (a DNN missing from upf_info is dropped)", view.get("dnns"), [v.session.dnn]),
        ("upf_info S-NSSAIs", len(view.get("snssai_upf_info_list") or []), 1),
        ("upf_info SST", infos[0].get("sst"), v.slice.sst),
        ("upf_info SD", _sd(infos[0].get("sd")), _want_sd(v.slice)),
        ("upf_info DNNs", infos[0].get("dnns"), [v.session.dnn]),
    ]


def smf(v, view):
    """The SMF: the UPF it associates with, its own N4/SBI addresses, the AMF it calls, the session
    it serves (DNN, pool, slice, QoS, AMBR, DNS, MTU) and the mini scenario's local data."""
    cfg = view["config"]
    local = (cfg.get("local_subscription_infos") or [{}])[0]
    qos = local.get("qos_profile") or {}
    smf_info = ((cfg.get("smf_info") or {}).get("sNssaiSmfInfoList") or [{}])[0]
    return [
        ("upfs (PFCP peers)", view.get("upfs"), [v.addresses.peers["n4"]]),
        ("UPF port", [u.get("port") for u in cfg.get("upfs") or []], [8805]),
        ("N4 address (its PFCP node id)", view["n4"]["addr4"], v.addresses.ip("n4")),
        ("SBI address", view["sbi"]["addr4"], v.addresses.ip("n11")),
        ("the AMF's URI", view.get("amf_url"), "http://{}:80".format(v.addresses.peers["n11"])),
        ("register_nf", view["register_nrf"], False),
        ("http_version", view["http_version"], 1),
        ("use_local_subscription_info", view["use_local_subscription_info"], True),
        ("use_local_pcc_rules", view["use_local_pcc_rules"], True),
        ("ue_mtu", view.get("ue_mtu"), v.ue_mtu),
        ("DNNs", view.get("dnns"), [v.session.dnn]),
        ("UE DNS", [(cfg.get("ue_dns") or {}).get(k) for k in ("primary_dns_ipv4", "secondary_dns_ipv4")],
         [v.dns1, v.dns2]),
        ("local subscription DNN", local.get("dnn"), v.session.dnn),
        ("local subscription SST", (local.get("snssai") or {}).get("sst"), v.slice.sst),
        ("local subscription SD", _sd((local.get("snssai") or {}).get("sd")), _want_sd(v.slice)),
        ("5QI", qos.get("5qi"), v.five_qi),
        ("session AMBR", (qos.get("session_ambr_ul"), qos.get("session_ambr_dl")), (v.ambr_ul, v.ambr_dl)),
        ("smf_info SST", (smf_info.get("sNssai") or {}).get("sst"), v.slice.sst),
        ("smf_info DNNs", [d.get("dnn") for d in smf_info.get("dnnSmfInfoList") or []], [v.session.dnn]),
    ]


def amf(v, view):
    """The AMF: its N2 and SBI addresses, the SMF it calls, MySQL (only kept in the simple
    scenario: otherwise pre_process() unsets the database), its GUAMI and PLMN/slice support."""
    cfg = view["config"]
    guami = (cfg.get("guami_list") or [{}])[0]
    plmn = (cfg.get("plmn_list") or [{}])[0]
    slices = plmn.get("slice_list") or [{}]
    features = cfg.get("support_features_options") or {}
    return [
        ("N2 address", view["n2"]["addr4"], v.addresses.ip("n2")),
        ("N2 port", view["n2"]["port"], 38412),
        ("SBI address", view["sbi"]["addr4"], v.addresses.ip("n11")),
        ("the SMF's URI", view["smf"]["uri_root"], "http://{}:80".format(v.addresses.peers["n11"])),
        ("simple scenario (no external AUSF/UDM)", features.get("enable_external_ausf_udm"), False),
        ("NF registration", features.get("enable_nf_registration"), False),
        ("MySQL host", view["database"]["server"], v.addresses.peers["db"]),
        ("MySQL user", view["database"]["user"], v.db_user),
        ("MySQL database", view["database"]["db"], "oai_db"),
        ("MySQL password (its length)", view["database"]["password_length"], len(v.db_password)),
        ("GUAMI", [guami.get(k) for k in ("mcc", "mnc", "region_id", "amf_set_id", "amf_pointer")],
         [v.common.mcc, v.common.mnc, int(v.region, 16), int(v.set_id, 16), int(v.pointer, 16)]),
        ("PLMN", [plmn.get(k) for k in ("mcc", "mnc", "tac")], [v.common.mcc, v.common.mnc, v.common.tac]),
        ("slice SST", slices[0].get("sst"), v.slice.sst),
        # FFFFFF is "no SD": the AMF then lists the slice without one.
        ("slice SD", _sd_or_none(slices[0].get("sd")), _want_sd(v.slice)),
    ]


CHECKS = {"upf": upf, "smf": smf, "amf": amf}
