"""A TCP proxy the fault tests cut and restore, in front of a server they must not stop.

`cut()` is the server's host dropping off the network as the clients see it: every open
connection is closed under them and new ones are refused. `restore()` listens again on the same
port, so the clients' settings never change. The server behind it keeps running throughout.
"""

from __future__ import annotations

import contextlib
import socket
import threading

ACCEPT_POLL_S = 0.2
CHUNK = 65536


class TcpProxy:
    def __init__(self, target: tuple[str, int], *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.target, self.host, self.port = target, host, port
        self.lock = threading.Lock()
        self.open_sockets: set[socket.socket] = set()
        self.listener: socket.socket | None = None
        self.stopping = threading.Event()
        self.acceptor: threading.Thread | None = None
        self.connections_made = 0

    @property
    def is_cut(self) -> bool:
        return self.listener is None

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        listener.settimeout(ACCEPT_POLL_S)
        self.port = listener.getsockname()[1]
        self.listener = listener
        self.stopping = threading.Event()
        self.acceptor = threading.Thread(
            target=self.accept_loop, args=(listener, self.stopping), daemon=True
        )
        self.acceptor.start()

    restore = start

    def cut(self) -> None:
        """Refuse new connections and drop every open one."""
        self.stopping.set()
        if self.acceptor is not None:
            self.acceptor.join()
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        with self.lock:
            doomed, self.open_sockets = self.open_sockets, set()
        for sock in doomed:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    close = cut

    def accept_loop(self, listener: socket.socket, stopping: threading.Event) -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()  # the server itself is down: the client sees the door shut
                continue
            upstream.settimeout(None)
            with self.lock:
                if stopping.is_set():
                    client.close()
                    upstream.close()
                    return
                self.open_sockets |= {client, upstream}
                self.connections_made += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(source, sink), daemon=True).start()

    def pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        # One side finished or was cut: end the pair, so neither end waits on a half-open link.
        with self.lock:
            self.open_sockets -= {source, sink}
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
