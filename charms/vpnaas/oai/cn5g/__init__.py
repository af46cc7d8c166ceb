"""The OAI 5G standalone components: MySQL, AMF, SMF, UPF (``common``: what they share), gNB
(with its NR UE simulator)."""
