"""MySQL's init file through MySQL's own init-file reader (`make oai-conformance`, issue 35).

MySQL 8.0 runs its ``init-file`` at every start, reading one statement at a time with
``read_bootstrap_query`` (sql/sql_bootstrap.cc) into a buffer of ``MAX_BOOTSTRAP_QUERY_SIZE``
bytes (sql/sql_bootstrap.h: 74,000); a longer statement stops the start. This check compiles
that file from OAI_SRC/mysql-server (a MySQL 8.0 tree, or a folder holding its sql/sql_bootstrap.h
and sql/sql_bootstrap.cc) with our driver (readers/mysql_init.cpp, which reads the file as the
server does: fgets per line) and runs it over the init file the charm's own program
(vnf/oai/mysql-init.py) writes from OAI's dump at the pinned release, for every case of
cases.py: among them 10,000 subscribers with 15-digit IMSIs, the most the charm accepts.
"""
import os
import re
import subprocess
import tempfile

from oai_conformance import cases, cn5g, nfbuild
from vpnaas.oai.cn5g import mysql

SOURCES = ("sql/sql_bootstrap.h", "sql/sql_bootstrap.cc")


def build(mysql_src, out_dir):
    """The reader binary, or raises nfbuild.BuildError."""
    os.makedirs(out_dir, exist_ok=True)
    binary = os.path.join(out_dir, "mysql-init-reader")
    result = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-I" + os.path.join(nfbuild.DRIVERS, "shim", "mysql"),
                             "-I" + mysql_src, "-o", binary, os.path.join(nfbuild.DRIVERS, "mysql_init.cpp"),
                             os.path.join(mysql_src, "sql", "sql_bootstrap.cc")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise nfbuild.BuildError(result.stdout.decode("utf-8", "replace")[-2000:])
    return binary


def limit_of(mysql_src):
    with open(os.path.join(mysql_src, "sql", "sql_bootstrap.h")) as f:
        found = re.search(r"#define MAX_BOOTSTRAP_QUERY_SIZE (\d+)", f.read())
    return int(found.group(1)) if found else None


def run(binary, text):
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(text)
    try:
        result = subprocess.run([binary, f.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        return result.returncode, result.stdout.decode("utf-8", "replace")
    finally:
        os.unlink(f.name)


def check(report, comp, mysql_tree, src_root, work):
    """Every case's init file through MySQL's reader; UNCHECKED without OAI_SRC/mysql-server."""
    mysql_src = os.path.join(src_root, "mysql-server")
    if not all(os.path.exists(os.path.join(mysql_src, p)) for p in SOURCES):
        report.line("UNCHECKED", "mysql: MySQL's init-file reader NOT RUN: OAI_SRC/mysql-server has no {}".format(
            " and ".join(SOURCES)))
        return
    if mysql_tree is None or mysql_tree.read(mysql.SCHEMA) is None:
        report.line("UNCHECKED", "mysql: init file not built: no OAI dump {} in OAI_SRC/mysql".format(mysql.SCHEMA))
        return
    try:
        binary = build(os.path.realpath(mysql_src), os.path.join(work, "build", "mysql-server"))
    except nfbuild.BuildError as e:
        report.line("MISMATCH", "mysql: MySQL's init-file reader did not build: {}".format(e))
        return
    init = cn5g.load_mysql_init()
    dump = mysql_tree.read(mysql.SCHEMA)
    limit = limit_of(mysql_src)
    for case, configs in cases.all_cases(("mysql",)):
        values = comp.config_values(configs["mysql"], None)
        text = "\n".join(init.statements(comp.init_spec(values), dump)) + "\n"
        status, output = run(binary, text)
        output = output.replace(values.password, "<redacted>")
        where = "mysql init file, {} ({} subscribers)".format(case, values.users)
        found = re.search(r"STATEMENTS (\d+) LONGEST (\d+)", output)
        if status != 0 or not found:
            report.line("MISMATCH", "{}: MySQL's reader refused it: {}".format(where, output.strip()[-300:]))
            continue
        count, longest = int(found.group(1)), int(found.group(2))
        expected = len(text.splitlines())
        kind = "ok" if count == expected else "MISMATCH"
        report.line(kind, "{}: MySQL's read_bootstrap_query read {} of {} statements, the longest {} bytes (its "
                          "limit {})".format(where, count, expected, longest, limit))
