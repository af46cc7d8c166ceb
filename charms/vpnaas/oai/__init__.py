"""The OAI workloads: what an OpenAirInterface network function adds to the generic charm.
``component`` (the description of a component: build, configure, serve), ``validation`` (the
grammar of OAI's own values), ``workload`` (the ops-side workload the charm composes); the LTE
EPS in ``lte`` and the 5G standalone core and RAN in ``cn5g``. A charm ships only its own
component's modules (the registry's ``modules``; scripts/bundle/build_charms.py).
"""
