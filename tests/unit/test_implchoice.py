"""`make demo IMPL=...`: which interfaces get which data plane (scripts/testbed/implchoice.py)."""
import pytest

from bundle import membership
from testbed import implchoice

EPS = membership.of_variant("eps_wg")[1]
SA = membership.of_variant("sa_wg")[1]


def test_one_name_is_every_interface():
    assert implchoice.parse("boringtun", EPS) == {rp: "boringtun" for rp in EPS}


def test_signalling_is_every_interface_but_the_gtp_u_ones():
    assert implchoice.parse("signalling=boringtun", EPS) == {rp: "boringtun" for rp in EPS if rp != "s1u"}
    assert implchoice.parse("signalling=boringtun", SA) == {rp: "boringtun" for rp in SA if rp != "n3"}
    assert implchoice.parse("userplane=kernel", EPS) == {"s1u": "kernel"}


def test_later_items_win_and_empty_is_the_default():
    assert implchoice.parse("boringtun, s1u=wireguard-go", EPS)["s1u"] == "wireguard-go"
    assert implchoice.parse("", EPS) == {} and implchoice.parse(None, EPS) == {}


#: No reference point can have this name (the registry allows 12 characters): "s5" would become one.
NOT_A_REFERENCE_POINT = "longer-than-any-reference-point"


@pytest.mark.parametrize("text", [NOT_A_REFERENCE_POINT + "=boringtun", "signalling=openvpn", "boringtun\nkernel",
                                  "s6a=Kernel"])
def test_unknown_interfaces_and_implementations_are_refused(text):
    with pytest.raises(implchoice.ChoiceError):
        implchoice.parse(text, EPS)


class _Spec(object):
    def __init__(self, name):
        self.name, self.config = name, {}


class _Rp(object):
    def __init__(self, name, provider, requirer):
        self.name, self.provider, self.requirer = name, provider, requirer


class _Inst(object):
    tunnelled = True
    name = "eps_wg"

    def __init__(self):
        self.vnfs = [_Spec(n) for n in ("hss", "mme", "spgwu", "enb")]
        self.refpoints = [_Rp("s6a", "mme", "hss"), _Rp("s1u", "spgwu", "enb")]


def test_the_choice_goes_into_both_ends_config_as_the_charm_option():
    inst = _Inst()
    asked = implchoice.apply([inst], "signalling=boringtun")
    assert asked == {"eps_wg": {"s6a": "boringtun"}}
    config = {spec.name: spec.config for spec in inst.vnfs}
    assert config == {"hss": {"s6a-implementation": "boringtun"}, "mme": {"s6a-implementation": "boringtun"},
                      "spgwu": {}, "enb": {}}
