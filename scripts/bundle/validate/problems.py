"""A validation finding: which file, where inside it, what is wrong."""


def fmt_path(parts):
    """["vnfd", "df", 0, "id"] -> "vnfd.df[0].id" (the notation every message uses)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += "[{}]".format(part)
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


class Problem:
    def __init__(self, file, path, message):
        self.file = file
        self.path = fmt_path(path) if isinstance(path, (list, tuple)) else path
        self.message = message

    def __str__(self):
        return "{}: {}: {}".format(self.file, self.path, self.message)

    def __repr__(self):
        return "Problem({!r})".format(str(self))
