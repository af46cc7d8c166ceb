"""Local testbed: the bundle's charms and VNF steps run for real in network namespaces, with
what cannot run here emulated.

Layout: the commands (``python -m testbed.<name>``: ``demo``, ``bench``, ``latency``,
``hookprofile``, ``lifecycle`` and its operations ``lifecycle_*``, ``lcm_conformance``; their
shared options: ``cli``) and the testbed itself (the tunnels and pairs it brings up: ``tunnels``,
``pair``, ``dataplane``, ``implchoice``; the stars of the convergence runs and their spoke join:
``convergence``, ``spokejoin``; the monitoring it starts: ``monitor``; the stand-ins of OAI
programs: ``standin``, ``ue_standin``) stand at the top; ``emulators/`` holds the emulated VCA, LCM and VIM, and
``measurement/`` what is measured and reported."""
