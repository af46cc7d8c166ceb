#!/usr/bin/env python3
"""Proxy charm of the MySQL VNF of the 5G core: the generic VPNaaS charm composed with the OAI workload
of vpnaas.oai.cn5g.mysql."""
from vpnaas.charm.base import VpnaasCharm, main
from vpnaas.oai.cn5g import mysql as oai_mysql
from vpnaas.oai.workload import OaiWorkload


class MysqlWorkload(OaiWorkload):
    component = oai_mysql.COMPONENT


class MysqlCharm(VpnaasCharm):
    workload_type = MysqlWorkload


if __name__ == "__main__":
    main(MysqlCharm)
