"""Read-only access to one OAI repository at a ref, through git (bare mirrors and checkouts alike)."""
import os
import subprocess
import tarfile
import tempfile


class SourceError(Exception):
    pass


def _git(path, *args, check=True):
    result = subprocess.run(["git", "-C", path] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and result.returncode != 0:
        raise SourceError("git {} in {}: {}".format(" ".join(args[:3]), path, result.stderr.decode().strip()))
    return result


def git_dir(path):
    """The git directory to use for ``path`` (a bare mirror, a checkout, or a folder holding repo/)."""
    for candidate in (path, os.path.join(path, "repo"), os.path.join(path, "repo", ".git")):
        if os.path.isdir(candidate) and _git(candidate, "rev-parse", "--git-dir", check=False).returncode == 0:
            return candidate
    raise SourceError("{} is not a git repository".format(path))


class Tree(object):
    """Files of a repository at one commit."""

    def __init__(self, path, ref=None):
        self.path = git_dir(path)
        self.ref = ref
        self.commit, self.resolved_from = self._resolve(ref)

    def _resolve(self, ref):
        names = []
        if ref:
            names = [ref, "refs/tags/" + ref, "refs/heads/" + ref, "refs/remotes/origin/" + ref]
        for name in names + ["HEAD"]:
            result = _git(self.path, "rev-parse", "-q", "--verify", name + "^{commit}", check=False)
            if result.returncode == 0:
                return result.stdout.decode().strip(), name
        raise SourceError("{}: neither {} nor HEAD resolves to a commit".format(self.path, ref))

    def read(self, rel):
        result = _git(self.path, "show", "{}:{}".format(self.commit, rel), check=False)
        return result.stdout.decode("utf-8", "replace") if result.returncode == 0 else None

    def files(self, *prefixes):
        out = _git(self.path, "ls-tree", "-r", "--name-only", self.commit, "--", *prefixes).stdout.decode()
        return [line for line in out.splitlines() if line]

    def gitlinks(self):
        """{path: commit} of the submodules the commit records."""
        out = _git(self.path, "ls-tree", "-r", self.commit).stdout.decode()
        links = {}
        for line in out.splitlines():
            meta, _, path = line.partition("\t")
            mode, kind, sha = meta.split()
            if kind == "commit":
                links[path] = sha
        return links

    def has_commit(self, sha):
        return _git(self.path, "cat-file", "-e", sha + "^{commit}", check=False).returncode == 0

    def has_branch(self, branch):
        for name in ("refs/heads/" + branch, "refs/remotes/origin/" + branch):
            if _git(self.path, "show-ref", "--verify", "-q", name, check=False).returncode == 0:
                return True
        return False

    def extract(self, sha, target):
        """The tree of ``sha`` into the folder ``target``."""
        with tempfile.TemporaryFile() as f:
            subprocess.run(["git", "-C", self.path, "archive", "--format=tar", sha], stdout=f, check=True)
            f.seek(0)
            with tarfile.open(fileobj=f) as tar:
                tar.extractall(target)
