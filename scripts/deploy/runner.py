"""Running (or, with DRY_RUN=1, printing) the osm and openstack commands, and the progress display.

Every command is an argument list run without a shell. It is echoed shell-quoted (what
shlex.join gives on Python 3.8+) with every configured secret replaced by ``******``, so the
output of a dry run is the exact command sequence an operator could paste.

Commands are of two kinds:
* actions change something; a dry run prints them with ``+ `` and does not run them;
* reads only look (``... show``, ``... list``); a dry run prints them as ``+ [read] `` and answers
  them as "absent" (nothing exists yet) -- or "present" where a teardown asks, so that the dry run
  of undeploy shows what it would delete.
"""

import os
import shlex
import subprocess
import sys
import time

REDACTED = "******"


class CommandError(Exception):
    pass


class Result:
    def __init__(self, argv, returncode, stdout="", stderr="", dry=False):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.dry = dry

    @property
    def ok(self):
        return self.returncode == 0


def quote_argv(argv):
    """shlex.join for any Python 3 (shlex.join itself needs 3.8)."""
    return " ".join(shlex.quote(str(a)) for a in argv)


class Runner:
    def __init__(self, cfg, out=None, execute=None, clock=None, sleep=None):
        self.cfg = cfg
        self.dry_run = cfg.dry_run
        self.out = out or sys.stdout
        self._execute = execute or subprocess.run
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.secrets = cfg.secrets()
        self.history = []  # (kind, argv, env overrides): what was run or printed, for tests/summary
        self.default_timeout = cfg.seconds("CMD_TIMEOUT")
        # OS_* / OSM_* given in deploy.env must reach the clients as if they had been exported.
        self.base_env = dict(os.environ)
        for key, value in cfg.values.items():
            if value and (key.startswith("OS_") or key.startswith("OSM_")) and key not in os.environ:
                self.base_env[key] = value

    # -- output ---------------------------------------------------------------------------
    def redact(self, text):
        text = str(text)
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def say(self, message=""):
        print(self.redact(message), file=self.out, flush=True)

    def format_command(self, argv, env=None):
        # GNU env takes its options before the first NAME=VALUE: `env -u X A=b cmd`, never
        # `env A=b -u X cmd` (that runs a command named -u).
        unset, assign = [], []
        for key, value in sorted((env or {}).items()):
            if value is None:
                if key in self.base_env:
                    unset += ["-u", key]
            elif self.base_env.get(key) != value:
                assign.append("{}={}".format(key, value))
        prefix = unset + assign
        words = (["env"] + prefix if prefix else []) + [str(a) for a in argv]
        return self.redact(quote_argv(words))

    # -- execution ------------------------------------------------------------------------
    def _env(self, env):
        if not env:
            return self.base_env
        merged = dict(self.base_env)
        for key, value in env.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def _call(self, argv, timeout, env, stdin=None):
        timeout = timeout or self.default_timeout
        try:
            proc = self._execute(
                [str(a) for a in argv],
                input=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=timeout,
                env=self._env(env),
                # Package and params paths are relative to the project root (DEPLOY_ROOT), so
                # `python -m deploy` works from any folder.
                cwd=self.cfg.root,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CommandError(
                "timed out after {:.0f} s: {}".format(timeout, self.format_command(argv, env))
            ) from None
        except FileNotFoundError:
            raise CommandError(
                "command not found: {} (see `make deploy` prerequisites in docs/deploy.md)".format(argv[0])
            ) from None
        return Result(argv, proc.returncode, proc.stdout or "", proc.stderr or "")

    def run(self, argv, timeout=None, env=None, check=True):
        """An action: changes state. Printed, not run, in a dry run."""
        self.history.append(("run", list(argv), env))
        self.say("+ " + self.format_command(argv, env))
        if self.dry_run:
            return Result(argv, 0, dry=True)
        result = self._call(argv, timeout, env)
        if check and not result.ok:
            raise CommandError(
                "failed (exit {}): {}\n{}".format(
                    result.returncode,
                    self.format_command(argv, env),
                    self.redact((result.stderr or result.stdout).strip()[-2000:]),
                )
            )
        return result

    def read(self, argv, timeout=None, env=None, dry_present=False):
        """A read: never changes state. A dry run prints it and answers "absent" (returncode 1,
        empty output), or "present" (returncode 0, empty output) when ``dry_present``."""
        self.history.append(("read", list(argv), env))
        if self.dry_run:
            self.say("+ [read] " + self.format_command(argv, env))
            return Result(argv, 0 if dry_present else 1, dry=True)
        return self._call(argv, timeout, env)

    def exists(self, argv, env=None, dry_present=False):
        return self.read(argv, env=env, dry_present=dry_present).ok

    def commands(self, kind=None):
        return [argv for k, argv, _ in self.history if kind is None or k == kind]


class Progress:
    """Step N/M with the elapsed time since the command started."""

    def __init__(self, runner, total):
        self.runner = runner
        self.total = total
        self.current = 0
        self.start = runner.clock()

    def elapsed(self):
        return self.runner.clock() - self.start

    @staticmethod
    def fmt(seconds):
        seconds = int(seconds)
        return "{:d}:{:02d}:{:02d}".format(seconds // 3600, seconds // 60 % 60, seconds % 60)

    def step(self, title):
        self.current += 1
        self.runner.say("")
        self.runner.say(
            "==> [step {}/{} {}] {}".format(self.current, self.total, self.fmt(self.elapsed()), title)
        )

    def note(self, message):
        self.runner.say("    [{}] {}".format(self.fmt(self.elapsed()), message))
