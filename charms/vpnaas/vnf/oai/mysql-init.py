"""Writes MySQL's init file for the 5G core's subscribers (on the MySQL VNF; Python 3.6 or newer).

The charm sends a JSON spec on stdin (it holds the subscribers' K and OPc and the AMF account's
password, so it is never an argument): ``schema`` (OAI's database dump in the fetched release),
``dst``, ``database``, ``user``, ``host`` (the AMF's address), ``password``, ``imsi_first``,
``count``, ``k``, ``opc``, ``sqn``. MySQL runs the file's statements at every start (its
``init-file``), one statement per line and no comment, so each is written to be run again:
the database and the ``users`` table only if missing (the table's definition is OAI's, taken from
the dump; none of the dump's rows), the account created if missing and its password set, its
grant, and the subscribers inserted or, when present, given the configured K and OPc while their
SQN stays what the AMF made it (in statements of at most ``STATEMENT_BUDGET`` bytes: MySQL's
limit on an init-file statement). The file is written whole (mode 0600) and only when it changed:
``CHANGED <path>`` then tells the caller. Also imported by the conformance check, which runs
``users_table`` over OAI's dump.
"""
import json
import os
import re
import sys
from typing import Any, Dict, List

USERS = re.compile(r"^CREATE TABLE `users` \((.*?)^\)([^;\n]*);", re.S | re.M)


class InitError(Exception):
    pass


def users_table(dump: str, database: str) -> str:
    """OAI's definition of the ``users`` table, as one idempotent statement in ``database``."""
    match = USERS.search(dump)
    if match is None:
        raise InitError("the database dump has no CREATE TABLE `users` (...); statement")
    body = " ".join(line.strip() for line in match.group(1).splitlines() if line.strip())
    if ";" in body or "\\" in body:
        raise InitError("the users table's definition holds a ';' or a backslash: not one plain statement")
    return "CREATE TABLE IF NOT EXISTS `{}`.`users` ({}){};".format(database, body, match.group(2).rstrip())


#: MySQL 8.0 reads each init-file statement into a buffer of MAX_BOOTSTRAP_QUERY_SIZE (74,000) bytes
#: and aborts the start on a longer one (sql/sql_bootstrap.{h,cc}: a line's bytes, its newline
#: included, plus one must stay below it). Each statement here stays within this budget, well
#: below that limit.
STATEMENT_BUDGET = 60000


def subscribers(spec: Dict[str, Any]) -> List[str]:
    """The subscribers as INSERT statements of at most STATEMENT_BUDGET bytes each (as many rows
    as fit): one statement of 10,000 rows would be 1.3 MB, which MySQL refuses in an init file."""
    first, width = int(spec["imsi_first"]), len(spec["imsi_first"])
    head = "INSERT INTO `{}`.`users` (`imsi`, `key`, `sqn`, `rand`, `OPc`) VALUES ".format(spec["database"])
    tail = " AS new ON DUPLICATE KEY UPDATE `key` = new.`key`, `OPc` = new.`OPc`;"
    out: List[str] = []
    rows: List[str] = []
    size = len(head) + len(tail)
    for i in range(int(spec["count"])):
        row = "('{}', 0x{}, {}, 0x{}, 0x{})".format(str(first + i).zfill(width), spec["k"], int(spec["sqn"]),
                                                     "0" * 32, spec["opc"])
        if rows and size + 2 + len(row) > STATEMENT_BUDGET:
            out.append(head + ", ".join(rows) + tail)
            rows, size = [], len(head) + len(tail)
        size += len(row) + (2 if rows else 0)
        rows.append(row)
    if rows:
        out.append(head + ", ".join(rows) + tail)
    return out


def statements(spec: Dict[str, Any], dump: str) -> List[str]:
    db, account = spec["database"], "'{}'@'{}'".format(spec["user"], spec["host"])
    return [
        "CREATE DATABASE IF NOT EXISTS `{}`;".format(db),
        users_table(dump, db),
        "CREATE USER IF NOT EXISTS {} IDENTIFIED BY '{}';".format(account, spec["password"]),
        "ALTER USER {} IDENTIFIED BY '{}';".format(account, spec["password"]),
        "GRANT SELECT, UPDATE ON `{}`.`users` TO {};".format(db, account),
    ] + subscribers(spec)


def write(path: str, text: str) -> bool:
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except (IOError, OSError):
        pass
    tmp = path + ".vpnaas-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)
    return True


def main() -> int:
    spec = json.load(sys.stdin)
    try:
        with open(spec["schema"]) as f:
            dump = f.read()
        text = "\n".join(statements(spec, dump)) + "\n"
    except (IOError, OSError) as e:
        sys.stdout.write("ERROR cannot read OAI's database dump {} ({}); is oai-install complete?\n".format(
            spec["schema"], e.strerror))
        return 3
    except InitError as e:
        sys.stdout.write("ERROR {}\n".format(e))
        return 3
    if write(spec["dst"], text):
        sys.stdout.write("CHANGED {}\n".format(spec["dst"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
