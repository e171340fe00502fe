"""A typed program using segflake; `mypy --strict` must accept it as it is."""

from __future__ import annotations

import array
import datetime as dt
from typing import Dict, List, Optional

import segflake
from segflake import DecodedId, Layout, Snowflake


def make_generator(worker_id: int, epoch: Optional[dt.datetime] = None) -> Snowflake:
    layout: Layout = Layout("twitter") if epoch is None else Layout.preset("twitter", epoch)
    return Snowflake(worker_id, layout=layout, max_drift_ms=1000, sequence_start="random")


def ids_for_orders(gen: Snowflake, count: int) -> Dict[str, int]:
    ids: List[int] = gen.next_ids(count)
    return {segflake.encode(i, "base62"): i for i in ids}


def fill_buffer(gen: Snowflake, n: int) -> array.array[int]:
    buf = array.array("Q", bytes(8 * n))
    written: int = gen.next_ids_into(buf)
    assert written == n
    return buf


def describe(gen: Snowflake, id_: int) -> str:
    d: DecodedId = gen.decode(id_)
    when: dt.datetime = d.datetime
    safe: Optional[int] = gen.layout.js_safe_until_ms
    return f"{id_} at {when.isoformat()} worker {d.worker_id} seq {d.sequence} js-safe-until {safe}"


def public_id(key: bytes, id_: int) -> str:
    o = segflake.Obfuscator(key)
    return segflake.encode_base32(o.obfuscate(id_))


def handle(text: str) -> Optional[int]:
    try:
        return segflake.parse(text, "base32")
    except segflake.ParseError as e:
        code: str = e.code
        print(code, e)
        return None
    except segflake.SegflakeError:
        raise


def main() -> None:
    gen = make_generator(7, dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    per_process: segflake.ProcessLocal[Snowflake] = segflake.per_process(lambda: make_generator(8))
    first: int = per_process().next_id()
    print(describe(gen, gen.next_id()), first)
    print(len(ids_for_orders(gen, 10)), len(fill_buffer(gen, 4)))
    print(public_id(bytes(range(16)), first), handle("not base32"))
    layout = Layout(time_bits=40, worker_bits=8, sequence_bits=15, tick_ms=2, order="time-sequence-worker")
    print(layout.max_ids_per_second, layout.to_dict(), segflake.decode(first).to_dict()["tick"])
    try:
        Snowflake(4096)
    except segflake.WorkerIdOutOfRangeError as e:
        bits: int = e.worker_bits
        print(bits)


if __name__ == "__main__":
    main()
