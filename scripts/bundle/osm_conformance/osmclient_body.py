"""The request body osmclient sends for `osm ns-create` / `osm nsi-create --config_file F`.

osmclient rewrites the config before posting it (vim account names become ids, `vim_account`
becomes `vimAccountId`, `vim-network-name` at the top becomes `vld`, ...). Rather than repeating
those rules, this runs osmclient's own ``Ns.create`` / ``Nsi.create`` against a stand-in client
that resolves names to fixed ids and an HTTP stand-in that records the body instead of sending
it. Only osmclient's public constructor arguments (http, client) are used, so any osmclient with
that shape works; the tests pass a small stand-in class.
"""

import json
import uuid

import yaml

# Stable ids: the same name gives the same id in osmclient's body and in NBI's database.
_NAMESPACE = uuid.UUID("6f2f2d2e-9a57-4d0b-9c1b-2f0f8f4a0c11")


def fake_id(kind, name):
    return str(uuid.uuid5(_NAMESPACE, "{}:{}".format(kind, name)))


class _Named:
    """client.<kind>.get(name) -> {"_id": fake_id(kind, name), "name": name}."""

    def __init__(self, kind, seen):
        self.kind, self.seen = kind, seen

    def get(self, name):
        self.seen.setdefault(self.kind, set()).add(name)
        return {"_id": fake_id(self.kind, name), "name": name, "id": name}


class _Client:
    def __init__(self):
        self.seen = {}
        self._headers = {}
        for kind in ("nsd", "nst", "vim", "wim"):
            setattr(self, kind, _Named(kind, self.seen))

    def get_token(self):
        return None


class _Http:
    def __init__(self):
        self.posted = None

    def set_http_header(self, header):
        pass

    def post_cmd(self, endpoint=None, postfields_dict=None, **kwargs):
        self.posted = json.loads(json.dumps(postfields_dict))
        return 201, json.dumps({"id": "conformance", "nslcmop_id": "op", "nsilcmop_id": "op"})


def request_body(client_class, kind, target, name, vim_account, config):
    """(body, {kind: names looked up}) osmclient would post.

    client_class: osmclient's Ns (kind "ns", target = NSD id) or Nsi (kind "nsi", target = NST id).
    config: the rendered params file (a dict); it is passed as the YAML text --config_file reads.
    """
    http, client = _Http(), _Client()
    api = client_class(http=http, client=client)
    text = yaml.safe_dump(config, sort_keys=False)
    api.create(target, name, vim_account, config=text)
    if http.posted is None:
        raise RuntimeError("osmclient {}.create posted nothing".format(client_class.__name__))
    return http.posted, {k: sorted(v) for k, v in client.seen.items()}


def scale_body(client_class, member, aspect, scale_out):
    """The body osmclient's ``Ns.scale_vnf`` posts for `osm vnf-scale <ns> <member>
    --scaling-group <aspect> --scale-out|--scale-in` (the NS looked up by name: a fixed id)."""
    http, client = _Http(), _Client()
    api = client_class(http=http, client=client)
    api.get = lambda name: {"_id": fake_id("ns", name), "name": name}
    api.scale_vnf("conformance", member, aspect, not scale_out, scale_out)
    if http.posted is None:
        raise RuntimeError("osmclient {}.scale_vnf posted nothing".format(client_class.__name__))
    return http.posted
