"""Reading the bundle's YAML sources: one mapping per file, with errors that name the file."""
import yaml

# libyaml's parser when present: the validator loads every file many times in the tests
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_mapping(full, shown, error):
    """The mapping in file ``full``; ``error`` (an exception class) names ``shown`` when the file
    cannot be read, is not YAML, or holds something other than a mapping."""
    try:
        with open(full) as f:
            data = yaml.load(f, Loader=SAFE_LOADER)
    except OSError as e:
        raise error("{}: cannot read: {}".format(shown, e.strerror)) from e
    except yaml.YAMLError as e:
        raise error("{}: not valid YAML: {}".format(shown, e)) from e
    if not isinstance(data, dict):
        raise error("{}: expected a mapping at the top level".format(shown))
    return data
