"""Every case of every shared vector file in tests/vectors."""

import asyncio
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import segflake
from conftest import load_vectors

# Files this binding runs (options.json: test_options.py; the registry conversations against
# the adapters of segflake.registries: zookeeper.json in test_zookeeper.py, etcd.json,
# redis.json and sql.json in test_registries.py); any other *.json in tests/vectors fails
# test_every_file_is_run.
HANDLED = {
    "options.json", "layouts.json", "snowflake.json", "codecs.json", "obfuscation.json", "segments.json", "serials.json",
    "zookeeper.json", "etcd.json", "redis.json", "sql.json",
}


def test_every_file_is_run(vectors_dir: Path) -> None:
    files = {p.name for p in vectors_dir.glob("*.json")}
    assert HANDLED <= files, f"missing vector files: {HANDLED - files}"
    assert files <= HANDLED, f"vector files this suite does not run yet: {files - HANDLED}"


def expect_error(exc: BaseException, case: Dict[str, Any]) -> None:
    assert isinstance(exc, segflake.SegflakeError), repr(exc)
    assert exc.code == case["error"], (case, exc.code, str(exc))
    if "message_contains" in case:
        assert case["message_contains"] in str(exc), (case, str(exc))


def cases(file: str, key: str) -> List[Dict[str, Any]]:
    data = load_vectors(file)
    found: List[Dict[str, Any]] = data[key]
    assert found, f"{file}: no {key} cases"
    return found


def test_layouts() -> None:
    n = 0
    for case in cases("layouts.json", "cases"):
        if "error" in case:
            with pytest.raises(segflake.SegflakeError) as info:
                segflake.Layout(case["layout"])
            expect_error(info.value, case)
            # The same layout given to a generator is refused the same way.
            with pytest.raises(segflake.SegflakeError) as info:
                segflake.Snowflake(0, layout=case["layout"])
            expect_error(info.value, case)
        else:
            layout = segflake.Layout(case["layout"])
            for field, value in case["expect"].items():
                assert getattr(layout, field) == value, (case["name"], field)
        n += 1
    assert n >= 10


DECODED = ("timestamp_ms", "tick", "worker_id", "sequence", "datacenter_id")


def test_compose_and_decode() -> None:
    for case in cases("snowflake.json", "compose"):
        layout = segflake.Layout(case["layout"])
        want = int(case["id"])
        fields = (case["tick"], case["worker_id"], case["sequence"])
        dc = case.get("datacenter_id")
        assert layout.compose(*fields, datacenter_id=dc) == want, case["name"]
        assert layout.compose(worker_id=case["worker_id"], sequence=case["sequence"],
                              timestamp_ms=case["timestamp_ms"], datacenter_id=dc) == want, case["name"]
        assert segflake.compose(*fields, datacenter_id=dc, layout=case["layout"]) == want
        d = layout.decode(want)
        assert d.to_dict() == {k: case.get(k) for k in DECODED}, case["name"]
        assert segflake.decode(want, case["layout"]) == d


def test_decode_real_world_ids() -> None:
    for case in cases("snowflake.json", "decode"):
        d = segflake.decode(int(case["id"]), case["layout"])
        assert d.to_dict() == {k: case.get(k) for k in DECODED}, case["name"]


def test_invalid_options() -> None:
    for case in cases("snowflake.json", "invalid_options"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.Snowflake(case["worker_id"], layout=case["layout"],
                               datacenter_id=case.get("datacenter_id"))
        expect_error(info.value, case)


def test_invalid_decode() -> None:
    for case in cases("snowflake.json", "invalid_decode"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.Layout(case["layout"]).decode(int(case["id"]))
        expect_error(info.value, case)


def test_codecs_valid() -> None:
    for case in cases("codecs.json", "valid"):
        i = int(case["id"])
        for fmt in ("decimal", "base62", "base32"):
            assert segflake.encode(i, fmt) == case[fmt]
            assert segflake.parse(case[fmt], fmt) == i
        assert segflake.encode(i) == case["decimal"]
        assert segflake.encode_decimal(i) == case["decimal"]
        assert segflake.encode_base62(i) == case["base62"]
        assert segflake.encode_base32(i) == case["base32"]
        assert segflake.parse_decimal(case["decimal"]) == i
        assert segflake.parse_base62(case["base62"]) == i
        assert segflake.parse_base32(case["base32"]) == i


def test_codecs_aliases() -> None:
    for case in cases("codecs.json", "parse_aliases"):
        assert segflake.parse(case["text"], case["format"]) == int(case["id"])


def test_codecs_invalid() -> None:
    for case in cases("codecs.json", "invalid"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.parse(case["text"], case["format"])
        expect_error(info.value, case)


def test_obfuscation() -> None:
    for case in cases("obfuscation.json", "cases"):
        key = bytes.fromhex(case["key_hex"])
        for o in (segflake.Obfuscator(key), segflake.Obfuscator(case["key_hex"]),
                  segflake.Obfuscator(bytearray(key))):
            assert o.obfuscate(int(case["id"])) == int(case["obfuscated"])
            assert o.deobfuscate(int(case["obfuscated"])) == int(case["id"])


def test_obfuscation_invalid() -> None:
    for case in cases("obfuscation.json", "invalid"):
        with pytest.raises(segflake.SegflakeError) as info:
            o = segflake.Obfuscator(bytes.fromhex(case["key_hex"]))
            o.obfuscate(int(case["id"]))
        expect_error(info.value, case)
        if "id" not in case:
            with pytest.raises(segflake.SegflakeError) as info:
                segflake.Obfuscator(case["key_hex"])
            expect_error(info.value, case)


# --- segments.json ---------------------------------------------------------------------

class VectorStore:
    """A Leaf table or a scripted store, as the vector describes it."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        if "leaf" in spec:
            self.max_id = int(spec["leaf"]["initial_max_id"])
            self.script: List[Tuple[int, int]] = []
        else:
            self.script = [(int(e["max_id"]), int(e["step"])) for e in spec["script"]]

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        with self.lock:
            self.calls += 1
            if not self.script:
                self.max_id += step
                return (self.max_id, step)
            return self.script[min(self.calls, len(self.script)) - 1]


class AsyncVectorStore(VectorStore):
    async def allocate(self, tag: str, step: int) -> Tuple[int, int]:  # type: ignore[override]
        await asyncio.sleep(0)
        return VectorStore.allocate(self, tag, step)


def expected_ids(case: Dict[str, Any]) -> List[int]:
    out: List[int] = []
    for first, last in case["ids"]:
        out.extend(range(int(first), int(last) + 1))
    assert len(out) == case["take"], case["name"]
    return out


def check_then_error(case: Dict[str, Any], take_next: Any) -> None:
    if "then_error" not in case:
        return
    with pytest.raises(segflake.SegflakeError) as info:
        take_next()
    expect_error(info.value, {"error": case["then_error"], "message_contains": case["message_contains"]})


def test_segment_sequences_threaded_generator() -> None:
    for case in cases("segments.json", "sequences"):
        with segflake.SegmentGenerator(VectorStore(case["store"]), **case["options"]) as gen:
            tag = gen.tag(case["tag"])
            got = [tag.next_id() for _ in range(case["take"])]
            assert got == expected_ids(case), case["name"]
            check_then_error(case, tag.next_id)


def test_segment_sequences_threaded_generator_batches() -> None:
    for case in cases("segments.json", "sequences"):
        with segflake.SegmentGenerator(VectorStore(case["store"]), **case["options"]) as gen:
            got = gen.next_ids(case["tag"], case["take"]) if case["take"] else []
            assert got == expected_ids(case), case["name"]
            check_then_error(case, lambda: gen.next_ids(case["tag"], 1))


def test_segment_sequences_async_store() -> None:
    async def run(case: Dict[str, Any]) -> None:
        # The store answers at once; a generous wait keeps a slow machine (an emulated CPU
        # with both cores busy took 1.7 s) from reading as a store that did not answer.
        options = {"wait_timeout_ms": 30_000, **case["options"]}
        async with segflake.AsyncSegmentGenerator(AsyncVectorStore(case["store"]), **options) as gen:
            got = [await gen.next_id(case["tag"]) for _ in range(case["take"])]
            assert got == expected_ids(case), case["name"]
            if "then_error" in case:
                with pytest.raises(segflake.SegflakeError) as info:
                    await gen.next_id(case["tag"])
                expect_error(info.value, {"error": case["then_error"], "message_contains": case["message_contains"]})

    for case in cases("segments.json", "sequences"):
        asyncio.run(run(case))


def test_segment_sequences_sans_io_engine() -> None:
    for case in cases("segments.json", "sequences"):
        engine = segflake.SegmentEngine(case["tag"], **case["options"])
        store = VectorStore(case["store"])
        got: List[int] = []
        failures = 0
        while len(got) < case["take"]:
            i = engine.try_next()
            if engine.wants_fetch:
                step = engine.begin_fetch()
                if step is not None:
                    try:
                        engine.complete_fetch(store.allocate(case["tag"], step))
                    except segflake.SegflakeError:
                        failures += 1
            if i is not None:
                got.append(i)
            assert failures < 3, (case["name"], got[-3:])
        assert got == expected_ids(case), case["name"]
        if "then_error" in case:
            while True:
                assert engine.try_next() is None
                step = engine.begin_fetch()
                if step is None:
                    break
                try:
                    engine.complete_fetch(store.allocate(case["tag"], step))
                except segflake.SegflakeError:
                    break
            err = engine.exhausted_error()
            expect_error(err, {"error": case["then_error"], "message_contains": case["message_contains"]})


def test_segment_dynamic_steps() -> None:
    for case in cases("segments.json", "dynamic_steps"):
        engine = segflake.SegmentEngine("dyn", **case["options"])
        store = VectorStore({"leaf": {"initial_max_id": "1"}})
        for fetch in case["fetches"]:
            while engine.try_next() is not None:
                pass
            assert engine.begin_fetch(fetch["at_ms"]) == fetch["step"], (case["name"], fetch)
            engine.complete_fetch(store.allocate("dyn", fetch["step"]), fetch["at_ms"])


def test_segment_invalid() -> None:
    for case in cases("segments.json", "invalid"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.SegmentEngine(case["tag"], **case["options"])
        expect_error(info.value, case)
        with pytest.raises(segflake.SegflakeError) as info:
            with segflake.SegmentGenerator(segflake.MemoryStore(), **case["options"]) as gen:
                gen.tag(case["tag"])
        expect_error(info.value, case)
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.AsyncSegmentGenerator(segflake.MemoryStore(), **case["options"]).tag(case["tag"])
        expect_error(info.value, case)


# --- serials.json ----------------------------------------------------------------------

def serial_options(o: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(o)
    if "last" in out:
        out["last"] = int(out["last"])
    return out


def test_serial_format() -> None:
    for case in cases("serials.json", "format"):
        gen = segflake.SerialGenerator(**serial_options(case["options"]))
        second = case["unix_ms"] // 1000
        assert gen.format(second, case["sequence"]) == int(case["serial"]), case["name"]
        assert gen.date_prefix(second) == int(case["date"]), case["name"]
        parts = gen.decode(int(case["serial"]))
        assert parts.unix_seconds == case["unix_seconds"]
        assert parts.worker_id == case["options"]["worker_id"]
        assert parts.sequence == case["sequence"]
        assert parts.date == int(case["date"])


def test_serial_format_errors() -> None:
    for case in cases("serials.json", "format_errors"):
        gen = segflake.SerialGenerator(**serial_options(case["options"]))
        with pytest.raises(segflake.SegflakeError) as info:
            gen.format(case["unix_ms"] // 1000, case["sequence"])
        expect_error(info.value, case)


def test_serial_next() -> None:
    for case in cases("serials.json", "next"):
        clock = segflake.ManualClock(case["steps"][0]["unix_ms"])
        gen = segflake.SerialGenerator(clock=clock, **serial_options(case["options"]))
        for step in case["steps"]:
            clock.set_ms(step["unix_ms"])
            if "error" in step:
                with pytest.raises(segflake.SegflakeError) as info:
                    gen.next()
                expect_error(info.value, step)
            else:
                assert gen.next() == int(step["serial"]), (case["name"], step)


def test_serial_counter() -> None:
    for case in cases("serials.json", "counter"):
        gen = segflake.SerialGenerator(**serial_options(case["options"]))
        for step in case["steps"]:
            assert gen.counter_second(step["now_ms"]) == step["counter_second"], (case["name"], step)
            got = gen.accept(step["counter_second"], step["sequence"])
            want = None if step["serial"] is None else int(step["serial"])
            assert got == want, (case["name"], step)


def test_serial_invalid_options() -> None:
    for case in cases("serials.json", "invalid_options"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.SerialGenerator(**serial_options(case["options"]))
        expect_error(info.value, case)
