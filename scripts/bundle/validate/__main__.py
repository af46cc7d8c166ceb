"""python -m bundle.validate: exit 1 and list every problem, or print a summary."""

import sys

from bundle import charmspec, descriptors
from bundle.validate import Summary, validate_bundle


def main():
    try:
        bundle = descriptors.load_bundle()
    except (descriptors.DescriptorError, charmspec.SpecError) as e:
        print("validate: {}".format(e), file=sys.stderr)
        return 1
    summary = Summary()
    problems = validate_bundle(bundle, summary=summary)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("validate: {} problem(s)".format(len(problems)), file=sys.stderr)
        return 1
    print(
        "validate: OK: {}; {} variants: {}".format(summary, len(bundle.variants), ", ".join(bundle.variants))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
