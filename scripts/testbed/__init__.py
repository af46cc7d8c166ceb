"""Local testbed: VIM emulation (network namespaces, bridges, sshd) and VCA emulation (the built
charms run through ``dispatch`` with Juju-style hook tools), sequenced like OSM's LCM."""
