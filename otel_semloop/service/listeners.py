"""The receivers' servers: a ``grpc.aio`` server and uvicorn, bound, limited and started.

:mod:`.receiver` answers requests; this is the socket side: addresses, TLS (optionally
with client certificates) and connection limits. gRPC: ``max_connections``,
``header_timeout`` for the handshake, ``max_concurrent_streams``. HTTP: uvicorn's h11
protocol wrapped (:func:`_guarded_protocol`) for a connection cap and a request-header
deadline, and ``keepalive_timeout``. Neither installs signal handlers (the service owns
SIGINT/SIGTERM).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import grpc
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from otel_semloop.service.config import ServiceConfig, listen_error, parse_address, read_file
from otel_semloop.service.held import WIRE
from otel_semloop.service.receiver import grpc_handler, http_app

__all__ = ["HttpListener", "start_grpc", "start_http"]


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns SIGINT/SIGTERM (uvicorn
    would re-raise the signal after its shutdown, before we have drained)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _guarded_protocol(max_connections: int, header_timeout: float, on_refuse: Any) -> type:
    """uvicorn's h11 protocol with a connection cap and a request-header deadline (a
    slow client cannot hold a connection, and so a file descriptor, forever)."""

    class Guarded(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= max_connections:
                self.transport = transport
                on_refuse("connections")
                transport.abort()
                return
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._header_timer = self.loop.call_later(header_timeout, self._header_deadline)

        def _header_deadline(self) -> None:
            self._header_timer = None
            # No complete request head in time (or an idle keep-alive): close.
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and self.transport is not None and not self.transport.is_closing():
                on_refuse("slow_headers")
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._header_timer is not None and self.cycle is not None and not self.cycle.response_complete:
                self._header_timer.cancel()
                self._header_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._header_timer is None and not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return Guarded


async def start_grpc(service: Any, config: ServiceConfig) -> tuple[grpc.aio.Server, int]:
    """The OTLP gRPC receiver for ``service`` (what :func:`~.receiver.grpc_handler` calls),
    listening on ``config.grpc``: the started server and its port. Raises ``OSError`` when
    the address cannot be bound."""
    assert config.grpc
    host, port = parse_address(config.grpc, "grpc")
    handlers = [
        grpc_handler(
            service,
            auth_token=config.auth_token,
            max_decompressed_bytes=config.max_decompressed_bytes,
            body_timeout=config.body_timeout,
            signal=signal,
        )
        for signal in WIRE
    ]
    server = grpc.aio.server(
        handlers=handlers,
        options=[
            ("grpc.max_receive_message_length", config.max_decompressed_bytes),
            ("grpc.max_concurrent_streams", config.max_concurrent_streams),
            # gRPC core closes connections past this at once (its ConnectionQuota).
            ("grpc.max_allowed_incoming_connections", config.max_connections),
            ("grpc.server_handshake_timeout_ms", int(config.header_timeout * 1000)),
            # A connection with no call open (a preface and SETTINGS, then nothing: it holds
            # a slot before any token is checked) is closed after keepalive_timeout, as an
            # idle HTTP connection is; a call's message is bounded by body_timeout (receiver).
            ("grpc.max_connection_idle_ms", int(config.keepalive_timeout * 1000)),
            ("grpc.so_reuseport", 0),
        ],
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    _probe_bind("the gRPC receiver (grpc)", config.grpc, host, port)
    if config.tls_certificate:
        credentials = grpc.ssl_server_credentials(
            [(read_file(config.tls_key), read_file(config.tls_certificate))],
            root_certificates=read_file(config.tls_client_ca),
            require_client_auth=bool(config.tls_client_ca),
        )
    try:  # gRPC raises RuntimeError (recent releases) or returns 0 (older ones)
        if config.tls_certificate:
            bound = server.add_secure_port(address, credentials)
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if not bound:
        raise listen_error("the gRPC receiver (grpc)", config.grpc)
    await server.start()
    return server, bound


def _probe_bind(listener: str, address: str, host: str, port: int) -> None:
    """Raise :func:`~.config.listen_error` (with the system's reason) when no address
    ``host`` resolves to can be bound at ``port``, as gRPC would find, before gRPC tries
    (it logs its own multi-line report and says only that binding failed)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise listen_error(listener, address, error) from None
    first: OSError | None = None
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(sockaddr)
                return
            except OSError as error:
                first = first or error
    raise listen_error(listener, address, first)


class HttpListener:
    """uvicorn serving the OTLP HTTP app on its own task of the loop (:func:`start_http`)."""

    def __init__(self, server: _Uvicorn, task: asyncio.Task[Any], port: int) -> None:
        self.server = server
        self.task = task
        self.port = port

    async def close(self) -> None:
        """Stop accepting, let uvicorn finish the requests in flight (up to 10 s)."""
        self.server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.task, 10)


async def start_http(service: Any, config: ServiceConfig) -> HttpListener:
    """The OTLP HTTP receiver for ``service`` (what :func:`~.receiver.http_app` calls),
    listening on ``config.http``, once uvicorn has started. Raises ``OSError`` when the
    address cannot be bound, or what uvicorn raised at start-up."""
    assert config.http
    host, port = parse_address(config.http, "http")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise listen_error("the HTTP receiver (http)", config.http, error) from None
    tls: dict[str, Any] = {}
    if config.tls_certificate:
        tls = {"ssl_certfile": config.tls_certificate, "ssl_keyfile": config.tls_key}
        if config.tls_client_ca:
            tls.update(ssl_ca_certs=config.tls_client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    app = http_app(
        service,
        max_request_bytes=config.max_request_bytes,
        max_decompressed_bytes=config.max_decompressed_bytes,
        auth_token=config.auth_token,
        body_timeout=config.body_timeout,
    )
    uv_config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        timeout_keep_alive=max(1, int(config.keepalive_timeout)),
        http=_guarded_protocol(config.max_connections, config.header_timeout, service.refused),
        **tls,
    )
    server = _Uvicorn(uv_config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    listener = HttpListener(server, task, sock.getsockname()[1])
    try:
        while not server.started:
            if task.done():
                task.result()  # raises what uvicorn raised
                raise OSError(f"the HTTP receiver on {config.http} stopped at startup")
            await asyncio.sleep(0.005)
    except BaseException:
        await listener.close()
        raise
    return listener
