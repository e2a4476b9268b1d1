"""ProxyCommand of the simulated fleet's ssh_config (with ProxyUseFdpass): python3 -I -S ssh_connect.py NAME PORT.

Connects to PORT of the container NAME at the address docker's default bridge (the management
LAN, eth0) gives it now, and hands the connected socket to ssh, which then talks to sshd over it
directly: nothing relays the bytes. Docker hands a container another address at every start, so a
fixed HostName would go stale after a `docker restart` (a simulated reboot, a chaos fault), while
a Spark's management address stays. Runs once per new SSH connection, not per command
(ControlPersist keeps the connection); asks the engine's socket, not the docker CLI, to stay cheap.
tests/sim/create.yml copies it into the sim cache beside the ssh_config that names it.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import urllib.parse


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self._path)


def _address(name):
    """The container's address on docker's default bridge ('' when it has none)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://"):
        conn = _UnixHTTP(host[len("unix://"):])
        conn.request("GET", "/containers/%s/json" % urllib.parse.quote(name))
        reply = conn.getresponse()
        if reply.status != 200:
            return ""
        networks = json.load(reply).get("NetworkSettings", {}).get("Networks") or {}
        return (networks.get("bridge") or {}).get("IPAddress", "")
    inspect = subprocess.run(
        ["docker", "inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", name],
        capture_output=True, text=True, check=False)
    return inspect.stdout.strip() if inspect.returncode == 0 else ""


def main():
    name, port = sys.argv[1], int(sys.argv[2])
    address = _address(name)
    if not address:
        sys.exit("ssh_connect: %s has no address on docker's default bridge (not running?)" % name)
    try:
        sock = socket.create_connection((address, port), timeout=10)
    except OSError as err:
        sys.exit("ssh_connect: %s (%s port %d): %s" % (name, address, port, err))
    socket.send_fds(socket.socket(fileno=1), [b"\0"], [sock.fileno()])


if __name__ == "__main__":
    main()
