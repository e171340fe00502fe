"""A gRPC client of `segflake serve --grpc-listen` in Python (grpcio, the stubs generated
from proto/segflake/v1/segflake.proto by grpcio-tools at run time, as a user's build would):

    grpc_client.py ADDR PROTO_DIR KEY OUT_IDS

Unary batches, a stream, bad input answered with its status and segflake code, a client
that drops a stream mid-way (the server goes on serving). Every ID is written to OUT_IDS
(u64, little-endian) for the scenario's duplicate check; prints one summary line.

TLS (a server started with ``--tls-cert``): ``SEGFLAKE_TLS_CA`` names the PEM file of the
certificate authorities to trust (else the system's), and ``SEGFLAKE_TLS_CERT`` and
``SEGFLAKE_TLS_KEY`` the client certificate and key for mutual TLS (``--tls-client-ca``);
any of them makes the channel a TLS one (ADDR then names a host in the server's
certificate, localhost:PORT)."""

from __future__ import annotations

import array
import importlib
import importlib.resources
import os
import sys
import tempfile

import grpc
from grpc_tools import protoc


def stubs(proto_dir: str):  # type: ignore[no-untyped-def]
    out = tempfile.mkdtemp(prefix="segflake-grpc-py-")
    include = importlib.resources.files("grpc_tools") / "_proto"  # type: ignore[attr-defined]
    code = protoc.main(
        [
            "protoc",
            # Compiled from its own folder: top-level modules segflake_pb2 and
            # segflake_pb2_grpc, beside (not inside) the installed segflake package.
            f"-I{proto_dir}/segflake/v1",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "segflake.proto",
        ]
    )
    assert code == 0, f"protoc failed: {code}"
    sys.path.insert(0, out)
    pb = importlib.import_module("segflake_pb2")
    rpc = importlib.import_module("segflake_pb2_grpc")
    return pb, rpc


def channel_to(addr: str) -> grpc.Channel:
    """A channel to ADDR: TLS when SEGFLAKE_TLS_CA, SEGFLAKE_TLS_CERT or SEGFLAKE_TLS_KEY
    is set (the files' contents to grpcio), else plaintext."""
    files = {name: os.environ.get(f"SEGFLAKE_TLS_{name.upper()}") for name in ("ca", "cert", "key")}
    if not any(files.values()):
        return grpc.insecure_channel(addr)
    if bool(files["cert"]) != bool(files["key"]):
        raise SystemExit("SEGFLAKE_TLS_CERT and SEGFLAKE_TLS_KEY go together (a client certificate and its key)")
    pem = {name: open(path, "rb").read() if path else None for name, path in files.items()}
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pem["ca"], private_key=pem["key"], certificate_chain=pem["cert"]
    )
    return grpc.secure_channel(addr, credentials)


def refusal(call, request):  # type: ignore[no-untyped-def]
    try:
        call(request)
    except grpc.RpcError as e:
        trailers = dict(e.trailing_metadata() or ())
        return e.code().name, trailers.get("segflake-code"), e.details()
    raise AssertionError("the call was not refused")


def main() -> int:
    addr, proto_dir, key, out_ids = sys.argv[1:5]
    pb, rpc = stubs(proto_dir)
    channel = channel_to(addr)
    client = rpc.SegflakeStub(channel)
    ids: list[int] = []

    got = list(client.NextSegmentIds(pb.IdsRequest(key=key, count=100)).ids)
    assert len(got) == 100 and got == sorted(got), got[:5]
    ids += got
    streamed = [list(m.ids) for m in client.StreamSegmentIds(pb.StreamRequest(key=key, count=500, batches=10))]
    assert [len(b) for b in streamed] == [500] * 10
    flat = [i for b in streamed for i in b]
    assert all(b > a for a, b in zip(flat, flat[1:])) and flat[0] > got[-1]
    ids += flat

    code, seg_code, details = refusal(client.NextSegmentIds, pb.IdsRequest(key=key, count=10**8))
    assert (code, seg_code) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT"), (code, seg_code)
    assert "out of range" in details, details
    code, seg_code, _ = refusal(client.NextSegmentIds, pb.IdsRequest(key="no_such_key_py"))
    assert code == "NOT_FOUND", code
    code, seg_code, _ = refusal(client.NextSegmentIds, pb.IdsRequest(key="has space"))
    assert (code, seg_code) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT"), (code, seg_code)

    # A client that goes away mid-stream.
    stream = client.StreamSegmentIds(pb.StreamRequest(key=key, count=50))
    for n, message in enumerate(stream, 1):
        ids += list(message.ids)
        if n == 4:
            stream.cancel()
            break
    after = list(client.NextSegmentIds(pb.IdsRequest(key=key, count=10)).ids)
    assert len(after) == 10
    ids += after
    channel.close()
    with open(out_ids, "wb") as f:
        f.write(array.array("Q", ids).tobytes())
    over = " over TLS" if os.environ.get("SEGFLAKE_TLS_CA") or os.environ.get("SEGFLAKE_TLS_CERT") else ""
    print(f"python grpc{over}: {len(ids)} segment IDs (unary, 10 streamed batches, a stream dropped after 4 messages); bad input refused with its codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
