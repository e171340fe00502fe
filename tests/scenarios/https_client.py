"""Python's HttpStore and AsyncHttpStore against ``segflake serve`` over HTTPS with client
certificates (``--tls-cert``, ``--tls-client-ca``, a key whose ``clients`` list names
order-svc):

    https_client.py BASE_URL CERT_DIR KEY

``CERT_DIR`` holds tests/tls/make-certs.sh's files. For each store: the right CA and the
order-svc certificate lease segments of KEY (and a SegmentGenerator issues IDs over them);
a CA that did not sign the server's certificate is a StoreError naming the certificate;
no client certificate, and one from another CA, are StoreErrors; billing-svc (trusted, not
in the key's list) is the server's 403 FORBIDDEN; ``cert_file``/``key_file`` with an
``http://`` URL are refused at construction; a server that never answers the handshake
fails within ``timeout``. Prints one summary line."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from typing import Any, Callable, List

import segflake
from segflake.stores import AsyncHttpStore, HttpStore


def main() -> int:
    base, certs, key = sys.argv[1:4]

    def files(ca: str, client: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"ca_file": f"{certs}/{ca}.pem", "timeout": 5.0}
        if client is not None:
            out.update(cert_file=f"{certs}/{client}.pem", key_file=f"{certs}/{client}.key")
        return out

    def refused(allocate: Callable[[], Any], *words: str) -> str:
        try:
            allocate()
        except segflake.StoreError as e:
            text = str(e)
            assert all(w in text for w in words), f"{text!r} does not say {words}"
            return text
        raise AssertionError(f"the allocation was not refused (expected {words})")

    # A listener that accepts connections and never answers (no TLS handshake).
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    silent_url = f"https://localhost:{silent.getsockname()[1]}"

    said: List[str] = []
    # --- HttpStore --------------------------------------------------------------------------
    with HttpStore(base, **files("ca", "order")) as store:
        first, second = store.allocate(key, 100), store.allocate(key, 100)
        assert isinstance(first, tuple) and isinstance(second, tuple), (first, second)
        assert second[0] > first[0], (first, second)
    with segflake.SegmentGenerator(HttpStore(base, **files("ca", "order")), step=100) as gen:
        ids = [gen.next_id(key) for _ in range(250)]
        assert ids == sorted(set(ids)) and ids[0] >= second[0], ids[:3]
    said.append(refused(lambda: HttpStore(base, **files("other-ca", "order")).allocate(key, 10), "certificate"))
    # The server's alerts: a certificate it requires, one from a CA it does not know.
    refused(lambda: HttpStore(base, **files("ca", None)).allocate(key, 10), "certificate required")
    refused(lambda: HttpStore(base, **files("ca", "stranger")).allocate(key, 10), "unknown ca")
    said.append(refused(lambda: HttpStore(base, **files("ca", "billing")).allocate(key, 10), "403 (FORBIDDEN)"))
    plain = base.replace("https://", "http://")
    try:
        HttpStore(plain, **files("ca", "order"))
        raise AssertionError("an http:// URL with a client certificate was taken")
    except segflake.InvalidArgumentError as e:
        assert "use https://" in str(e), e
    began = time.monotonic()
    said.append(refused(lambda: HttpStore(silent_url, **{**files("ca", "order"), "timeout": 0.5}).allocate(key, 1)))
    assert time.monotonic() - began < 3, time.monotonic() - began

    # --- AsyncHttpStore ---------------------------------------------------------------------
    async def aio() -> None:
        async with AsyncHttpStore(base, **files("ca", "order")) as store:
            answer = await store.allocate(key, 100)
            assert isinstance(answer, tuple) and answer[0] > second[0], answer
        for ca, client, words in (
            ("other-ca", "order", ("certificate",)),
            ("ca", None, ("certificate required",)),
            ("ca", "stranger", ("unknown ca",)),
            ("ca", "billing", ("403 (FORBIDDEN)",)),
        ):
            try:
                async with AsyncHttpStore(base, **files(ca, client)) as store:
                    await store.allocate(key, 10)
            except segflake.StoreError as e:
                assert all(w in str(e) for w in words), (str(e), words)
            else:
                raise AssertionError(f"AsyncHttpStore with {ca} and {client} was not refused")
        try:
            AsyncHttpStore(plain, **files("ca", "order"))
            raise AssertionError("an http:// URL with a client certificate was taken")
        except segflake.InvalidArgumentError:
            pass
        began = time.monotonic()
        try:
            async with AsyncHttpStore(silent_url, **{**files("ca", "order"), "timeout": 0.5}) as store:
                await store.allocate(key, 1)
        except (segflake.StoreError, TimeoutError, asyncio.TimeoutError):
            pass
        else:
            raise AssertionError("a server that never answers did not time out")
        assert time.monotonic() - began < 3, time.monotonic() - began

    asyncio.run(aio())
    silent.close()
    short = [t[t.find(" failed: ") + 1 or t.find(" answered ") + 1 :] for t in said]
    print(
        "python HttpStore/AsyncHttpStore over mutual TLS: segments leased and 250 IDs issued with order-svc's "
        "certificate; refused: another CA, no client certificate, an untrusted one, billing-svc, http:// with "
        f"certificates, a silent server within the timeout; {short[0]!r}; {short[1]!r}; {short[2]!r}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
