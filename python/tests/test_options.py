"""The core's option tables: every case of tests/vectors/options.json through this binding's
host values, and the stubs' keyword and attribute names checked against the tables."""

import ast
import inspect
import json
from pathlib import Path
from typing import Any, Dict, List, Set

import pytest

import segflake
from segflake import _native
from conftest import load_vectors


def host_value(v: Any) -> Any:
    """A vector input as Python passes it: {"int": "digits"} is an int."""
    if isinstance(v, dict):
        if set(v) == {"int"}:
            return int(v["int"])
        return {k: host_value(x) for k, x in v.items()}
    return v


def comparable(settings: Dict[str, Any]) -> Dict[str, Any]:
    """Settings as the vectors spell them: integers beyond 2^53 as decimal strings."""
    out: Dict[str, Any] = {}
    for k, v in settings.items():
        if isinstance(v, dict):
            v = comparable(v)
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
            v = str(v)
        out[k] = v
    return out


def test_every_options_case() -> None:
    data = load_vectors("options.json")
    now_ms = data["now_ms"]
    n = 0
    for case in data["cases"]:
        inputs = {k: host_value(v) for k, v in case["input"].items()}
        want = case["snake"]
        if "error" in want:
            with pytest.raises(segflake.SegflakeError) as info:
                _native._options(case["set"], inputs, now_ms)
            assert info.value.code == want["error"]["code"], (case["name"], str(info.value))
            assert str(info.value) == want["error"]["message"], case["name"]
        else:
            got = _native._options(case["set"], inputs, now_ms)
            assert comparable(got) == want["settings"], case["name"]
        n += 1
    assert n == len(data["cases"]) and n >= 40


def test_the_constructors_apply_the_same_rules() -> None:
    # The public constructors go through the same tables as _options.
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.SegmentGenerator(segflake.MemoryStore(), step=9, max_step=5)
    assert str(info.value) == "invalid step: 9 is out of range; allowed 1..=5 (max_step)"
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.SegmentEngine("t", fetch_threads=2)  # type: ignore[call-arg]
    assert 'unknown option "fetch_threads"' in str(info.value)
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.SerialGenerator(counter_timeout_ms=0)
    assert str(info.value) == "invalid counter_timeout_ms: got 0; allowed integers 1..=3600000"
    assert segflake.SegmentGenerator(segflake.MemoryStore(), store_timeout_ms=250).options["store_timeout_ms"] == 250
    assert segflake.SerialGenerator(counter_timeout_ms=70).counter_timeout_ms == 70


# --- the stubs against the core's tables -----------------------------------------------

TABLES = json.loads(_native._tables())
STUB = ast.parse((Path(_native.__file__).parent / "_native.pyi").read_text())


def option_names(set_name: str, threads: bool = True) -> Set[str]:
    return {o["name"] for o in TABLES["options"][set_name] if threads or not o["threads_only"]}


def stub_class(name: str) -> ast.ClassDef:
    for node in STUB.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"_native.pyi declares no class {name}")


def init_keywords(cls: str) -> Set[str]:
    for node in stub_class(cls).body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            return {x.arg for x in a.args[1:] + a.kwonlyargs}
    raise AssertionError(f"{cls} has no __init__ in _native.pyi")


def properties(cls: str) -> Set[str]:
    return {
        node.name
        for node in stub_class(cls).body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
    }


def typed_dict_keys(cls: str) -> Set[str]:
    return {n.target.id for n in stub_class(cls).body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


# Keywords of a constructor that are not options of the core (the store, the clock...).
CONSTRUCTORS = [
    ("Layout", "layout", True, {"now_ms"}),
    ("Snowflake", "snowflake", True, {"clock"}),
    ("SegmentGenerator", "segment", True, {"store"}),
    ("SegmentEngine", "segment", False, {"tag", "stores"}),
    ("SerialGenerator", "serial", True, {"counter", "clock"}),
]


@pytest.mark.parametrize("cls, set_name, threads, extra", CONSTRUCTORS)
def test_stub_keywords_are_the_core_options(cls: str, set_name: str, threads: bool, extra: Set[str]) -> None:
    assert init_keywords(cls) - extra == option_names(set_name, threads), cls


@pytest.mark.parametrize("cls, set_name, threads, extra", CONSTRUCTORS)
def test_help_shows_the_core_options(cls: str, set_name: str, threads: bool, extra: Set[str]) -> None:
    # The signature help() and inspect show (a literal text_signature in the binding).
    parameters = set(inspect.signature(getattr(_native, cls)).parameters)
    assert parameters - extra == option_names(set_name, threads), cls


def test_from_registry_takes_the_snowflake_and_lease_options() -> None:
    # A registry assigns the whole worker field: no worker_id, no datacenter_id.
    expected = (option_names("snowflake") - {"worker_id", "datacenter_id"}) | option_names("lease")
    for node in stub_class("Snowflake").body:
        if isinstance(node, ast.FunctionDef) and node.name == "from_registry":
            a = node.args
            assert {x.arg for x in a.args + a.kwonlyargs} - {"registry", "owner", "clock"} == expected
            break
    else:
        raise AssertionError("_native.pyi declares no Snowflake.from_registry")
    shown = set(inspect.signature(_native.Snowflake.from_registry).parameters)
    assert shown - {"registry", "owner", "clock"} == expected


def test_async_drivers_take_the_core_options() -> None:
    def keywords(fn: Any) -> Set[str]:
        return {p for p in inspect.signature(fn).parameters if p != "self"}

    assert keywords(segflake.AsyncSegmentGenerator.__init__) - {"store"} == option_names("segment", threads=False)
    assert keywords(segflake.AsyncSerialGenerator.__init__) - {"counter", "clock"} == option_names("serial")


def test_segment_options_dict_is_the_core_table() -> None:
    assert typed_dict_keys("SegmentOptionsDict") == option_names("segment")
    assert typed_dict_keys("LayoutDict") == option_names("layout")


# Properties a stub class has beyond the core's record fields.
RECORDS: List[Any] = [
    ("DecodedId", "DecodedId", {"datetime"}),
    ("SegmentStats", "SegmentStats", set()),
    ("SerialParts", "SerialParts", set()),
    ("Layout", "Layout", set()),
    ("LeaseStats", "LeaseStats", set()),
]


@pytest.mark.parametrize("cls, record, extra", RECORDS)
def test_stub_attributes_are_the_core_record_fields(cls: str, record: str, extra: Set[str]) -> None:
    fields = {f["name"] for f in TABLES["records"][record]}
    assert properties(cls) - extra == fields, cls


def test_records_read_every_field() -> None:
    layout = segflake.Layout()
    for f in TABLES["records"]["Layout"]:
        getattr(layout, f["name"])
    d = layout.decode(layout.compose(5, 3, 7))
    assert d.to_dict() == {f["name"]: getattr(d, f["name"]) for f in TABLES["records"]["DecodedId"]}
    assert d == layout.decode(layout.compose(5, 3, 7)) and hash(d) == hash(layout.decode(layout.compose(5, 3, 7)))
    assert repr(d).startswith("DecodedId(timestamp_ms=")
    with pytest.raises(AttributeError):
        getattr(d, "nope")
