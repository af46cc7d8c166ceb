"""Build-time tooling of the bundle: charm specs and builds, packages, validation."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHARMS_DIR = os.path.join(ROOT, "charms")
BUILD_DIR = os.path.join(ROOT, "build")
