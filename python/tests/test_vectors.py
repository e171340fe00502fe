"""Every case of every shared vector file in tests/vectors."""

from pathlib import Path
from typing import Any, Dict, List

import pytest

import segflake
from conftest import load_vectors

# Files this binding runs; any other *.json in tests/vectors fails test_every_file_is_run.
HANDLED = {"layouts.json", "snowflake.json", "codecs.json", "obfuscation.json"}


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


def test_compose_and_decode() -> None:
    for case in cases("snowflake.json", "compose"):
        layout = segflake.Layout(case["layout"])
        want = int(case["id"])
        fields = (case["tick"], case["worker_id"], case["sequence"])
        assert layout.compose(*fields) == want, case["name"]
        assert layout.compose(worker_id=case["worker_id"], sequence=case["sequence"],
                              timestamp_ms=case["timestamp_ms"]) == want, case["name"]
        assert segflake.compose(*fields, layout=case["layout"]) == want
        d = layout.decode(want)
        assert (d.timestamp_ms, d.tick, d.worker_id, d.sequence) == (
            case["timestamp_ms"], case["tick"], case["worker_id"], case["sequence"]), case["name"]
        assert segflake.decode(want, case["layout"]) == d


def test_decode_real_world_ids() -> None:
    for case in cases("snowflake.json", "decode"):
        d = segflake.decode(int(case["id"]), case["layout"])
        assert d.to_dict() == {k: case[k] for k in ("timestamp_ms", "tick", "worker_id", "sequence")}, case["name"]


def test_invalid_options() -> None:
    for case in cases("snowflake.json", "invalid_options"):
        with pytest.raises(segflake.SegflakeError) as info:
            segflake.Snowflake(case["worker_id"], layout=case["layout"])
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
