"""Hosts on one machine: Linux network namespaces joined by veth links, for the multi-host test.

A `Topology` has a server host (web, Redis, PostgreSQL) and worker hosts, each worker joined to
the server by a link of its own, so one worker's link can be cut (`ip link set ... down`) while
the others carry on. The test process reaches the server host through one more link.

Processes are started in a host with `nsenter --net` (not `ip netns exec`, which mounts a fresh
/sys over the cgroup hierarchy that the grading sandbox needs), and with a hostname of their
own (`unshare --uts`), so that each worker reports the host it is on.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field

SERVER_ADDRESS_ON_LINK = "1"  # x.y.z.1 on each worker's link is the server's end


def why_namespaces_are_missing() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add, veth links)"
    for tool in ("ip", "nsenter", "unshare"):
        if shutil.which(tool) is None:
            return f"no `{tool}` here: install iproute2 and util-linux (`make faults-tools`)"
    return None


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


def veth_peer(name: str, namespace: str) -> list[str]:
    """The rest of `ip link add <end>`: a veth whose other end is `name` in `namespace`."""
    return ["type", "veth", "peer", "name", name, "netns", namespace]


def unused_subnet() -> str:
    """A 10.213.N /30 for the link from the test process's own (the machine's) namespace: the
    only addresses that live outside our namespaces, so pick one no interface here uses."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    used += subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    free = [n for n in range(256) if f"10.213.{n}." not in used]
    return f"10.213.{random.choice(free)}"


@dataclass
class Host:
    namespace: str
    hostname: str
    # The server's address as this host sees it (for a worker: the server's end of its link).
    server_address: str = ""
    link: str = ""  # the interface, in this host's namespace, that joins it to the server

    def prefix(self) -> list[str]:
        """Put before a command to run it on this host, under this host's name."""
        enter = ["nsenter", f"--net=/run/netns/{self.namespace}", "unshare", "--uts"]
        return [*enter, "sh", "-c", 'hostname "$0" && exec "$@"', self.hostname]

    def cut(self) -> None:
        ip("-n", self.namespace, "link", "set", self.link, "down")

    def restore(self) -> None:
        ip("-n", self.namespace, "link", "set", self.link, "up")


@dataclass
class Topology:
    tag: str  # unique per test run: names of namespaces and links
    server: Host
    workers: list[Host] = field(default_factory=list)
    server_address: str = ""  # the server as the test process reaches it

    @classmethod
    def build(cls, workers: int) -> Topology:
        tag = f"cf{os.getpid() % 100000}"
        server = Host(f"{tag}srv", "site-server")
        topology = cls(tag, server)
        try:
            topology.add_namespace(server.namespace)
            # The test process's link to the server host.
            subnet = unused_subnet()
            ip("link", "add", f"{tag}h", *veth_peer("eth-test", server.namespace))
            ip("addr", "add", f"{subnet}.1/30", "dev", f"{tag}h")
            ip("link", "set", f"{tag}h", "up")
            ip("-n", server.namespace, "addr", "add", f"{subnet}.2/30", "dev", "eth-test")
            ip("-n", server.namespace, "link", "set", "eth-test", "up")
            topology.server_address = f"{subnet}.2"
            for n in range(workers):
                topology.add_worker(n)
        except Exception:
            topology.tear_down()
            raise
        return topology

    def add_namespace(self, name: str) -> None:
        ip("netns", "add", name)
        ip("-n", name, "link", "set", "lo", "up")

    def add_worker(self, n: int) -> None:
        letter = "abcdefgh"[n]
        host = Host(f"{self.tag}w{letter}", f"node-{letter}", link="eth0")
        self.add_namespace(host.namespace)
        subnet = f"192.168.{n + 1}"
        ip(
            "-n",
            self.server.namespace,
            "link",
            "add",
            f"to-{letter}",
            *veth_peer("eth0", host.namespace),
        )
        ip("-n", self.server.namespace, "addr", "add", f"{subnet}.1/24", "dev", f"to-{letter}")
        ip("-n", self.server.namespace, "link", "set", f"to-{letter}", "up")
        ip("-n", host.namespace, "addr", "add", f"{subnet}.2/24", "dev", "eth0")
        ip("-n", host.namespace, "link", "set", "eth0", "up")
        host.server_address = f"{subnet}.{SERVER_ADDRESS_ON_LINK}"
        self.workers.append(host)

    def tear_down(self) -> None:
        """Deleting a namespace deletes its links, the test process's end included."""
        for host in [self.server, *self.workers]:
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
