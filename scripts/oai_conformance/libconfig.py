"""libconfig's own parser (the C library OAI reads its .conf files with), through ctypes.

Debian's libconfig9 (1.5, the version of Ubuntu 18.04 that the VNFs run) is used rather than a
Python re-implementation, so that what parses here parses in OAI. Its error accessors are macros
over ``config_t``'s fields, hence the structure below (libconfig.h of 1.5).
"""
import ctypes
import ctypes.util


class ConfigT(ctypes.Structure):
    _fields_ = [
        ("root", ctypes.c_void_p),
        ("destructor", ctypes.c_void_p),
        ("flags", ctypes.c_ushort),
        ("tab_width", ctypes.c_ushort),
        ("default_format", ctypes.c_short),
        ("include_dir", ctypes.c_char_p),
        ("error_text", ctypes.c_char_p),
        ("error_file", ctypes.c_char_p),
        ("error_line", ctypes.c_int),
        ("error_type", ctypes.c_int),
        ("filenames", ctypes.c_void_p),
        ("num_filenames", ctypes.c_uint),
        ("_spare", ctypes.c_char * 256),  # room for fields of later versions
    ]


class Unavailable(Exception):
    pass


def _library():
    for name in (ctypes.util.find_library("config"), "libconfig.so.9", "libconfig.so.11"):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    raise Unavailable("libconfig is not installed (Debian: apt-get install libconfig9)")


def parse(text):
    """None when ``text`` parses, else 'line N: error'."""
    lib = _library()
    cfg = ConfigT()
    lib.config_init(ctypes.byref(cfg))
    lib.config_read_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    try:
        if lib.config_read_string(ctypes.byref(cfg), text.encode("utf-8")) == 1:
            return None
        return "line {}: {}".format(cfg.error_line, (cfg.error_text or b"").decode("utf-8", "replace"))
    finally:
        lib.config_destroy(ctypes.byref(cfg))
