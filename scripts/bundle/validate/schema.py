"""The project's SOL006-subset JSON schemas (scripts/bundle/schema/*.schema.yaml)."""

import functools
import ipaddress
import json
import os

import jsonschema
import yaml
from referencing import Registry, Resource

from bundle.validate.problems import Problem

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schema")
FORMATS = jsonschema.FormatChecker(formats=())


@FORMATS.checks("ip-address", raises=ValueError)
def _ip_address(value):
    if not isinstance(value, str):
        return True
    ipaddress.ip_address(value)
    return True


@FORMATS.checks("ip-prefix", raises=ValueError)
def _ip_prefix(value):
    if not isinstance(value, str):
        return True
    # strict: host bits set (10.0.0.1/24) is not a prefix
    ipaddress.ip_network(value, strict=True)
    return True


def _load(name):
    with open(os.path.join(SCHEMA_DIR, name + ".schema.yaml")) as f:
        return yaml.safe_load(f)


@functools.lru_cache(maxsize=None)
def _registry():
    resources = []
    for name in ("common", "vnfd", "nsd", "nst", "ns-params"):
        resources.append((name, Resource.from_contents(_load(name))))
    return Registry().with_resources(resources)


@functools.lru_cache(maxsize=None)
def validator(ref):
    """ref: "vnfd", "nsd", "nst", "ns-params#/$defs/ns", "ns-params#/$defs/nsi"."""
    schema = {"$ref": ref}
    return jsonschema.Draft202012Validator(schema, registry=_registry(), format_checker=FORMATS)


def _message(err):
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed)
        return "unknown key(s) {} (allowed: {})".format(
            ", ".join(map(repr, extra)), ", ".join(sorted(allowed))
        )
    if err.validator == "oneOf" and err.context:
        best = min(err.context, key=lambda e: len(list(e.path)))
        return best.message
    return err.message


# Schema validation is the slow part of a run; the same content (the sources and their
# unchanged variants, again and again in the tests) gives the same findings.
_MEMO = {}


def check(ref, data, file):
    key = (ref, json.dumps(data, sort_keys=True, default=repr))
    if key not in _MEMO:
        errors = sorted(validator(ref).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        _MEMO[key] = [(list(err.absolute_path), _message(err)) for err in errors]
    return [Problem(file, path, message) for path, message in _MEMO[key]]
