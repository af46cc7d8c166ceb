"""A small synthetic OAI-like source tree for the tests: templates with the placeholders and the
lines the charms' edits expect, and stand-ins for the scripts the configure steps run. None of it
is OAI's text; it only has the shape the charms rely on (``make oai-conformance`` checks OAI's own).
"""
import os
import re
import stat

#: The lines each template needs for the charm's edits (the placeholders are added generically).
FRAGMENTS = {
    "spgw_c.conf": """S11_CP: {
  INTERFACE_NAME = "@SGW_INTERFACE_NAME_FOR_S11@"; # the S11 interface
  IPV4_ADDRESS = "read";
};
SX: {
  INTERFACE_NAME = "@PGW_INTERFACE_NAME_FOR_SX@";
  IPV4_ADDRESS = "read";
};
IP_ADDRESS_POOL: {
  IPV4_LIST = (
    {RANGE = "10.9.0.2 - 10.9.0.100";},
    {RANGE = "10.9.1.2 - 10.9.1.100";}
  );
};
APN_LIST = (
  {APN_NI = "@DEFAULT_APN@"; IPV4_POOL = 0;},
  {APN_NI = "apn1"; IPV4_POOL = 1;}
);
""",
    "spgw_u.conf": """S1U: {
  INTERFACE_NAME = "@SGW_INTERFACE_NAME_FOR_S1U_S12_S4_UP@";
  IPV4_ADDRESS = "read";
};
SX: {
  INTERFACE_NAME = "@SGW_INTERFACE_NAME_FOR_SX@";
  IPV4_ADDRESS = "read";
};
PDN_NETWORK_LIST = (
  {NETWORK_IPV4 = "10.0.0.0/24"; SNAT = "yes";}
);
""",
    "enb.band7.tm1.50PRB.usrpb210.conf": """tracking_area_code = 1;
plmn_list = ( { mcc = 1; mnc = 1; mnc_length = 2; } );
N_RB_DL = 25;
downlink_frequency = 2680000000L;
mme_ip_address = ( { ipv4 = "127.0.0.3"; } );
NETWORK_INTERFACES: {
  ENB_INTERFACE_NAME_FOR_S1_MME = "eth0";
  ENB_IPV4_ADDRESS_FOR_S1_MME = "10.0.0.1/24";
  ENB_INTERFACE_NAME_FOR_S1U = "eth0";
  ENB_IPV4_ADDRESS_FOR_S1U = "10.0.0.1/24";
  ENB_IPV4_ADDRESS_FOR_X2C = "10.0.0.1/24";
};
""",
    "gnb.sa.band78.fr1.106PRB.usrpb210.conf": """gNBs = ( {
    tracking_area_code  =  1;
    plmn_list = ({ mcc = 1; mnc = 1; mnc_length = 2; snssaiList = ({ sst = 1; }) });
    amf_ip_address      = ( { ipv4       = "127.0.0.5";
                              active     = "yes"; } );
    NETWORK_INTERFACES : {
        GNB_INTERFACE_NAME_FOR_NG_AMF            = "eth9";
        GNB_IPV4_ADDRESS_FOR_NG_AMF              = "10.0.0.9/24";
        GNB_INTERFACE_NAME_FOR_NGU               = "eth9";
        GNB_IPV4_ADDRESS_FOR_NGU                 = "10.0.0.9/24";
    };
} );
""",
    "ue.conf": """uicc0 = {
imsi = "1";
key = "0";
opc= "0";
dnn= "x";
nssai_sst=9;
nssai_sd=9;
}
""",
    "hss_rel14_fd.conf": '#ListenOn = "127.0.0.1";\n',
    "ue_eurecom_test_sfr.conf": """PLMN: {
  PLMN4: { FULLNAME="B"; SHORTNAME="B"; MNC="93"; MCC="208"; };
};
UE0: {
  SIM: { MSIN="0"; USIM_API_K="0"; OPC="0"; MSISDN="1"; };
  HPLMN= "20893";
  OPLMN_LIST = ("20893");
};
""",
}

#: The certificate script of the MME, shaped like OAI's: it makes the four files when none names
#: the FQDN, and leaves them alone otherwise.
CHECK_CERT = """#!/bin/bash
out=$1 fqdn=$2
if [ -f "$out/mme.cert.pem" ] && grep -q "CN=$fqdn" "$out/mme.cert.pem"; then exit 0; fi
mkdir -p "$out"
for f in mme.cakey.pem mme.cert.pem mme.cacert.pem mme.key.pem; do echo "CN=$fqdn $f" > "$out/$f"; done
"""


def template(entry):
    """A template for one file of a render spec: its fragment, then one line per placeholder the
    charm fills that neither the fragment nor an edit's replacement already holds."""
    base = os.path.basename(entry["src"])
    text = FRAGMENTS.get(base, "")
    introduced = "".join(e["repl"] for e in entry.get("edits", []))
    tokens = [t for t in sorted(entry.get("tokens", {})) if t not in text and t not in introduced]
    if base.endswith(".json"):
        pairs = ['"k{}": "{}"'.format(i, t) for i, t in enumerate(tokens)]
        return "{" + ", ".join(pairs + ['"logname": "logs/hss.log"', '"ossfile": "conf/oss.json"']) + "}\n"
    return text + "".join('t{} = "{}";\n'.format(i, t) for i, t in enumerate(tokens))


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def write_tree(src, source_dir, spec, extra_specs=()):
    """The templates of ``spec`` (and ``extra_specs``, e.g. the UE's SIM) under ``src``, where
    the charm expects them under ``source_dir``; plus the MME's certificate script."""
    for s in (spec,) + tuple(extra_specs):
        for entry in s["files"]:
            if entry.get("src", "").startswith(source_dir + "/"):
                write(os.path.join(src, entry["src"][len(source_dir) + 1:]), template(entry))
    write(os.path.join(src, "scripts", "check_mme_s6a_certificate"), CHECK_CERT, 0o755)


def executable(path, text):
    write(path, text, 0o755)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def placeholders(text):
    return re.findall(r"@[A-Za-z][A-Za-z0-9_-]*@", text)


#: The shape of the users table in a MySQL dump (the table OAI's AMF reads), for MySQL's init file.
USERS_DUMP = """-- a synthetic dump
DROP TABLE IF EXISTS `other`;
CREATE TABLE `users` (
  `imsi` varchar(15) NOT NULL,
  `key` varbinary(16) NOT NULL,
  `sqn` bigint(20) unsigned NOT NULL,
  `rand` varbinary(16) NOT NULL,
  `OPc` varbinary(16) DEFAULT NULL,
  PRIMARY KEY (`imsi`)
) ENGINE=MyISAM DEFAULT CHARSET=latin1;
INSERT INTO `users` VALUES ('001010000000001',0x00,0,0x00,0x00);
"""
