"""What the testbed emulates because it cannot run here: the Juju VCA that runs the charms' hooks
(``vca``, ``vcaops``, ``uniter``, ``scheduler``, the hook tools: ``hooktool``, ``hookcontext``,
``toolserver``, ``hookclient``; the faults it injects: ``faults``), OSM's LCM that orders a
network service's life (``lcm``, ``lcm_data``, ``lcm_heal``, ``lcm_scale``, ``lcm_upgrade``,
``nsmodel``) and the VIM that gives the VNFs their machines (``vim``: network namespaces,
bridges, sshd; ``vnf_login``). Each follows the real system's semantics, citing its source."""
