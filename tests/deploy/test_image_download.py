"""`make deploy` without IMAGE: the official Ubuntu 18.04 image, verified against the release's
SHA256SUMS; served here by an HTTP server on loopback."""

import hashlib
import http.server
import os
import subprocess
import threading

import pytest
from deploy_helpers import base_env

from deploy.config import Config
from deploy.microstack import PrepareError, Site
from deploy.runner import Runner
from deploy.state import State

NAME = "ubuntu-18.04-server-cloudimg-amd64.img"
IMAGE = b"QFI\xfb" + os.urandom(300000)  # a small stand-in for the qcow2 image


@pytest.fixture
def server():
    """{path: bytes} served on 127.0.0.1; yields (base URL, files, request log)."""
    files, log = {}, []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            log.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:{}".format(httpd.server_address[1]), files, log
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _site(root, **extra):
    env = base_env(root, **dict({"IMAGE": ""}, **extra))
    cfg = Config(environ=env)
    created = []

    def execute(argv, **kw):
        if argv[1:3] == ["image", "show"]:
            return subprocess.CompletedProcess(argv, 1, "", "No Image found")
        created.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    runner = Runner(cfg, execute=execute, out=open(os.devnull, "w"))
    return Site(runner, cfg, "openstack", 1, State(root, False)), created


def _sums(digest):
    return "{} *{}\n{} *other.img\n".format(digest, NAME, "0" * 64).encode()


def test_default_image_is_downloaded_and_verified(fake_root, server):
    base, files, log = server
    files["/release/" + NAME] = IMAGE
    files["/release/SHA256SUMS"] = _sums(hashlib.sha256(IMAGE).hexdigest())
    site, created = _site(fake_root, IMAGE_URL=base + "/release/" + NAME)
    site.ensure_images(["ubuntu18.04"])
    cached = os.path.join(fake_root, "build/deploy/images", NAME)
    with open(cached, "rb") as f:
        assert f.read() == IMAGE
    assert created[0][created[0].index("--file") + 1] == cached
    assert created[0][-1] == "ubuntu18.04"
    assert sorted(log) == ["/release/SHA256SUMS", "/release/" + NAME]
    # a second run reuses the verified cache and downloads only the checksum file again
    site, _ = _site(fake_root, IMAGE_URL=base + "/release/" + NAME)
    site.ensure_images(["ubuntu18.04"])
    assert log.count("/release/" + NAME) == 1


def test_a_mismatching_image_is_refused_and_not_kept(fake_root, server):
    base, files, _ = server
    files["/release/" + NAME] = IMAGE
    files["/release/SHA256SUMS"] = _sums(hashlib.sha256(b"another image").hexdigest())
    site, created = _site(fake_root, IMAGE_URL=base + "/release/" + NAME)
    with pytest.raises(PrepareError, match="download refused"):
        site.ensure_images(["ubuntu18.04"])
    assert created == []
    assert os.listdir(os.path.join(fake_root, "build/deploy/images")) == []


def test_an_image_missing_from_the_checksum_file_is_refused(fake_root, server):
    base, files, log = server
    files["/release/" + NAME] = IMAGE
    files["/release/SHA256SUMS"] = b"%s *other.img\n" % (b"0" * 64)
    site, created = _site(fake_root, IMAGE_URL=base + "/release/" + NAME)
    with pytest.raises(PrepareError, match="lists no sha256 for " + NAME):
        site.ensure_images(["ubuntu18.04"])
    assert created == [] and log == ["/release/SHA256SUMS"]


def test_image_overrides_and_is_checked_only_against_given_sums(fake_root, server, tmp_path):
    base, files, _ = server
    files["/mine.img"] = IMAGE
    site, created = _site(fake_root, IMAGE_URL="http://127.0.0.1:9/never", IMAGE=base + "/mine.img")
    site.ensure_images(["ubuntu18.04"])  # no checksum file is fetched for a user's IMAGE without IMAGE_SHA256SUMS
    assert created[0][created[0].index("--file") + 1].endswith("/mine.img")
    sums = tmp_path / "SUMS"
    sums.write_text("{}  mine.img\n".format("f" * 64))
    os.remove(created[0][created[0].index("--file") + 1])
    site, _ = _site(fake_root, IMAGE=base + "/mine.img", IMAGE_SHA256SUMS=str(sums))
    with pytest.raises(PrepareError, match="download refused"):
        site.ensure_images(["ubuntu18.04"])
