"""The login an emulated VNF offers the charms: its sshd configuration, host key and home.

Each VNF runs a real OpenSSH server in its own namespaces; what a cloud image decides for its
login (keys only, no PAM, the user's home and shell start-up files) is decided here.
"""
import os
import subprocess

HOST_KEY = "ssh_host_ed25519_key"


def new_host_key(state_dir):
    """A new host key, as a rebuilt VM would have (takes effect at the next sshd start)."""
    key = os.path.join(state_dir, HOST_KEY)
    for path in (key, key + ".pub"):
        if os.path.exists(path):
            os.remove(path)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)


def home(state_dir):
    """The home of the VNF's login user, as a cloud image has it.

    bash started by sshd reads ~/.bashrc even for a command (its remote-shell rule), and the
    namespaces share this machine's /root: every session the charms open would run this
    machine's .bashrc (here pyenv's init: about 0.1 s of CPU and forty processes per session,
    more than the tunnel step itself on a quiet VNF). An Ubuntu image's .bashrc returns at once
    for a shell that is not interactive; the VNF's home has that line only."""
    path = os.path.join(state_dir, "home")
    os.makedirs(path, mode=0o700, exist_ok=True)
    with open(os.path.join(path, ".bashrc"), "w") as f:
        f.write("# the VNF's login shell: nothing for a shell that is not interactive (as Ubuntu's)\n"
                "case $- in *i*) ;; *) return ;; esac\n")
    return path


def sshd_config(state_dir, listen, env):
    """sshd_config's text: keys only, root by key, and ``env`` plus the VNF's own HOME in every session."""
    env = dict(env, HOME=home(state_dir))
    lines = [
        "Port 22", "ListenAddress " + listen,
        "HostKey " + os.path.join(state_dir, HOST_KEY),
        "PidFile " + os.path.join(state_dir, "sshd.pid"),
        "AuthorizedKeysFile " + os.path.join(state_dir, "authorized_keys"),
        "StrictModes no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "PrintMotd no", "UseDNS no",
        "MaxStartups 50", "LogLevel INFO",
        "SetEnv " + " ".join("{}={}".format(k, v) for k, v in sorted(env.items())),
    ]
    return "\n".join(lines) + "\n"
