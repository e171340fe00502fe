"""Segments leased from a ``segflake serve`` over HTTP (the standard library's http.client)."""

from __future__ import annotations

import http.client
import json
import re
from typing import Any, Optional, Set, Tuple
from urllib.parse import quote, urlsplit

from .._native import InvalidArgumentError, StoreError
from ._common import (
    Answer,
    Connections,
    check_ca_file,
    check_step,
    check_tag,
    check_tls_file,
    give_back_args,
    give_back_token,
    ssl_context,
)

_MAX_ID = re.compile(r"^[0-9]{1,20}$")


def https_context(
    base_url: str, secure: bool, ca_file: Optional[str], cert_file: Optional[str], key_file: Optional[str]
) -> Any:
    """The ``ssl.SSLContext`` of an ``https://`` store given a CA file or a client
    certificate (``None``: http.client's default context, the system's certificate
    authorities); each argument checked here, an :class:`InvalidArgumentError` naming the
    one at fault."""
    given = [n for n, v in (("ca_file", ca_file), ("cert_file", cert_file), ("key_file", key_file)) if v is not None]
    if not given:
        return None
    if not secure:
        raise InvalidArgumentError(
            f"{', '.join(given[:-1]) + ' and ' if len(given) > 1 else ''}{given[-1]} "
            f"{'is' if len(given) == 1 else 'are'} for TLS, but base_url {base_url!r} "
            "is http://: use https://"
        )
    if (cert_file is None) != (key_file is None):
        have, missing = ("cert_file", "key_file") if key_file is None else ("key_file", "cert_file")
        raise InvalidArgumentError(
            f"{have} without {missing}: a client certificate needs both its certificate (cert_file) "
            "and its private key (key_file)"
        )
    try:
        ca = None if ca_file is None else check_ca_file(ca_file, "HttpStore TLS")
        cert = None if cert_file is None else check_tls_file(cert_file, "HttpStore TLS", "client certificate file")
        key = None if key_file is None else check_tls_file(key_file, "HttpStore TLS", "client key file")
        context = ssl_context(ca)
    except InvalidArgumentError:
        raise
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    if cert is not None:
        import ssl

        try:
            # An encrypted key fails here, rather than OpenSSL asking for its passphrase on the terminal.
            context.load_cert_chain(cert, key, password=lambda: b"")
        except (ssl.SSLError, OSError) as e:
            raise InvalidArgumentError(
                f"HttpStore TLS: the client certificate {cert!r} and key {key!r} do not load "
                f"(PEM, the key unencrypted and matching the certificate): {e}"
            ) from None
    return context


class HttpStore:
    """Segments from a ``segflake serve`` (Tinyid's client mode): each allocation is one
    ``POST {base_url}/api/segment/alloc/{tag}?step=N`` answered ``{"maxId","step"}``, so the
    application needs no database credentials, only the service's URL and, if the key has
    one, its ``token`` (sent as ``Authorization: Bearer TOKEN``).

    One keep-alive connection behind a lock (safe from several threads), reopened after a
    failure and in a forked child. A failure raises :class:`segflake.StoreError` naming the
    URL and the server's error code; the generator treats it like any store failure
    (buffered IDs keep flowing, the next fetch retries). A key the server does not have
    (404 ``UNKNOWN_TAG``) is answered ``None``: :class:`segflake.UnknownTagError`. As the
    database stores do, the first allocation of a tag asks for the row's own step (no
    ``?step``) and answers carry the row's step (``tagStep``) where the server's store
    keeps one.

    ``https://`` URLs verify the server's certificate and host name against ``ca_file`` (a
    PEM file of certificate authorities; else the system's). For mutual TLS (a server
    started with ``--tls-client-ca``), ``cert_file`` and ``key_file`` name the client's
    certificate (PEM, its chain after it) and its private key (PEM, unencrypted), given
    together. Any of the three with an ``http://`` URL, one of ``cert_file`` and
    ``key_file`` without the other, a file that cannot be read, or a certificate and key
    that do not load (or do not match) raise :class:`segflake.InvalidArgumentError` here,
    not at the first allocation. A handshake the server refuses (a certificate it does not
    trust) fails the allocation with :class:`segflake.StoreError` naming the TLS error;
    a client the server trusts but does not allow for the key is the server's
    ``403 (FORBIDDEN)``.

    ``give_back`` (called by a generator that closes with IDs it fetched and did not issue)
    is ``POST {base_url}/api/segment/giveback/{tag}?expected_max_id=E&max_id=M&token=T``,
    answered ``{"givenBack": true|false}``; ``T`` is a fresh random 128-bit token (32 hex
    digits) per give back, under which the server records and applies it, so the request
    resent by a proxy or load balancer after a lost reply changes nothing. A server without
    that endpoint (404) gives nothing back.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        timeout: float = 10.0,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
    ) -> None:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidArgumentError(
                f"invalid base_url {base_url!r}: expected an http:// or https:// URL of a "
                "segflake serve (http://ids.internal:8080)"
            )
        if token is not None and (not isinstance(token, str) or not token or any(c.isspace() for c in token)):
            raise InvalidArgumentError(f"invalid token {token!r}: expected a non-empty string without whitespace")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
            raise InvalidArgumentError(f"invalid timeout {timeout!r}: expected seconds in (0, 3600]")
        self.base_url = base_url.rstrip("/")
        self._path = parts.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        secure = parts.scheme == "https"
        host, port = parts.hostname, parts.port
        context = https_context(base_url, secure, ca_file, cert_file, key_file)

        def connect() -> http.client.HTTPConnection:
            if secure:
                return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
            return http.client.HTTPConnection(host, port, timeout=timeout)

        self._conns: Connections[http.client.HTTPConnection] = Connections(connect, lambda c: c.close())
        self._started: Set[str] = set()

    def allocate(self, tag: str, step: int) -> Optional[Answer]:
        """Leases ``step`` IDs of ``tag`` (the tag's own step the first time); returns
        ``(max_id, step)`` or ``(max_id, step, tag_step)``: the caller owns
        ``[max_id - step, max_id)``. ``None`` when the server has no such key."""
        check_tag(tag)
        check_step(step)
        query = f"?step={step}" if tag in self._started else ""
        path = f"{self._path}/api/segment/alloc/{quote(tag, safe='')}{query}"
        url = self.base_url + path[len(self._path) :]
        try:
            try:
                status, raw = self._post(path)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed the idle keep-alive connection: once more on a new one.
                # A request it did answer is then a skipped range (a gap), never a repeat.
                status, raw = self._post(path)
        except (OSError, http.client.HTTPException) as e:
            raise StoreError(f"POST {url} failed: {type(e).__name__}: {e}") from e
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        if status == 404 and code == "UNKNOWN_TAG":
            return None
        if status != 200:
            message = body.get("message") if isinstance(body, dict) else text[:200]
            raise StoreError(f"POST {url} answered {status} ({code or 'no code'}): {message}")
        max_id = body.get("maxId") if isinstance(body, dict) else None
        got_step = body.get("step") if isinstance(body, dict) else None
        tag_step = body.get("tagStep") if isinstance(body, dict) else None
        if (
            not isinstance(max_id, str)
            or not _MAX_ID.match(max_id)
            or type(got_step) is not int
            or not (tag_step is None or type(tag_step) is int)
        ):
            raise StoreError(f'POST {url} answered {text[:200]!r}, not {{"maxId","step"}}')
        self._started.add(tag)
        if tag_step is None:
            return int(max_id), got_step
        return int(max_id), got_step, tag_step

    def _post(self, path: str) -> Tuple[int, bytes]:
        """``POST path`` on the kept connection: the status and the body."""

        def post(conn: http.client.HTTPConnection) -> Tuple[int, bytes]:
            conn.request("POST", path, headers=self._headers)
            response = conn.getresponse()
            return response.status, response.read()

        result: Tuple[int, bytes] = self._conns.run(post)
        return result

    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """Asks the server to lower the tag's ``max_id`` from ``expected_max_id`` to
        ``max_id`` if it is still ``expected_max_id`` (nobody allocated since): the IDs
        ``[max_id, expected_max_id)`` were leased by a generator that closed without
        issuing them. Returns the server's ``givenBack``; ``False`` from a server without
        the endpoint (404).

        The request carries ``token=T``, a fresh random 128-bit token (hex): the server
        records and applies the give back under it, so the same request resent (by a proxy
        or a load balancer after a lost reply) changes nothing, on that server or another
        one on the same store."""
        if not give_back_args(tag, expected_max_id, max_id):
            return False
        token = give_back_token()
        path = (
            f"{self._path}/api/segment/giveback/{quote(tag, safe='')}"
            f"?expected_max_id={expected_max_id}&max_id={max_id}&token={token}"
        )
        url = self.base_url + path[len(self._path) :]
        # Sent once, on a new connection (not a kept one the server may have closed): a
        # server older than the token ignores it, and a request repeated there after its
        # answer was lost could lower the row again after another client's allocation
        # brought it back to expected_max_id, handing that client's range out twice.
        self._conns.close()
        try:
            status, raw = self._post(path)
        except (OSError, http.client.HTTPException) as e:
            raise StoreError(f"POST {url} failed: {type(e).__name__}: {e}") from e
        if status == 404:
            return False
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if status != 200:
            code = body.get("code") if isinstance(body, dict) else None
            message = body.get("message") if isinstance(body, dict) else text[:200]
            raise StoreError(f"POST {url} answered {status} ({code or 'no code'}): {message}")
        given = body.get("givenBack") if isinstance(body, dict) else None
        if not isinstance(given, bool):
            raise StoreError(f'POST {url} answered {text[:200]!r}, not {{"givenBack"}}')
        return given

    def close(self) -> None:
        """Closes the connection."""
        self._conns.close()

    def __enter__(self) -> "HttpStore":
        return self

    def __exit__(self, *args: object) -> None:
        self.close()
