"""`make lcm-conformance` (testbed/lcm_conformance.py) itself: it runs every check on every VNF of
every NS variant and reports a difference when upstream's function answers otherwise. The run
against LCM 19's own code needs its sources (LCM_SRC); here a stand-in for them, built from the
emulation's functions, must agree fully, and one that answers otherwise must be caught."""
import types

import pytest

from testbed import lcm_conformance
from testbed.emulators import lcm_data


def standin(**changes):
    module = types.SimpleNamespace(get_configuration=lcm_data.get_configuration,
                                   find_software_version=lcm_data.find_software_version,
                                   get_ee_sorted_initial_config_primitive_list=lcm_data.sorted_initial_primitives)
    for name, fn in changes.items():
        setattr(module, name, fn)
    return module


def test_every_vnf_of_every_ns_variant_is_checked():
    labels = {label for label, _vnfd, _extra in lcm_conformance.cases()}
    assert {"eps_wg/spgwu", "sa_wg/amf", "eps_wg_osm10/spgwu"} <= labels


def test_agreeing_functions_give_no_difference():
    diffs, checks = lcm_conformance.compare(standin(), lcm_data.map_primitive_params)
    assert diffs == [] and checks > 500


@pytest.mark.parametrize("changes, mapper", [
    ({"get_configuration": lambda vnfd, entity: lcm_data.get_configuration(vnfd, entity) or {}}, None),
    ({"find_software_version": lambda vnfd: "2.0"}, None),
    ({}, lambda prim, params, given: {}),
])
def test_a_function_that_answers_otherwise_is_caught(changes, mapper):
    diffs, _checks = lcm_conformance.compare(standin(**changes), mapper or lcm_data.map_primitive_params)
    assert diffs


def test_without_sources_it_says_not_run(capsys):
    assert lcm_conformance.main([]) == 2
    assert "not run: no LCM sources" in capsys.readouterr().err
