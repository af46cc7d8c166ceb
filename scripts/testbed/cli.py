"""Command-line checks shared by the bench and the demo: a bad argument is one line on stderr
and exit status 2, before anything is created."""
import argparse
import os


class OneLineParser(argparse.ArgumentParser):
    """argparse, minus the usage block on errors."""

    def error(self, message):
        self.exit(2, "{}: error: {}\n".format(self.prog, message))


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("{!r} is not a whole number".format(text)) from None
    if value < 1:
        raise argparse.ArgumentTypeError("{} must be at least 1".format(value))
    return value


def hook_slots(text):
    """``--parallel``: units whose hooks the emulated VCA runs at once; 0: no bound (Juju under OSM)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("{!r} is not a whole number".format(text)) from None
    if value < 0:
        raise argparse.ArgumentTypeError("{} must be 0 (no bound) or more".format(value))
    return value


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("{!r} is not a number".format(text)) from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("{} must be a finite number, 0 or more".format(text))
    return value


def parse_list(parser, option, text, choices=None, convert=str):
    """A comma-separated list: no empty item, every item converted and among ``choices``."""
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        parser.error("{}: empty item in {!r} (comma-separated list)".format(option, text))
    try:
        values = [convert(x) for x in items]
    except (ValueError, argparse.ArgumentTypeError) as e:
        parser.error("{}: {}".format(option, e))
    unknown = [v for v in values if choices is not None and v not in choices]
    if unknown:
        parser.error("{}: unknown {}; choose from {}".format(option, ", ".join(map(str, unknown)), ", ".join(choices)))
    return values


def check_out_dir(parser, out):
    """``out`` must be a directory or creatable as one, in a writable place."""
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error("--out {}: exists and is not a directory".format(out))
    parent = out if os.path.isdir(out) else os.path.dirname(os.path.abspath(out))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        parser.error("--out {}: {} is not a writable directory".format(out, parent))


def terminate(signum, _frame):
    """SIGTERM's handler of a command that brings up a testbed: raise KeyboardInterrupt, so that
    its teardown runs as on Ctrl-C."""
    raise KeyboardInterrupt("signal {}".format(signum))
