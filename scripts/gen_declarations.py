#!/usr/bin/env python3
"""Writes the option and record declarations of the npm packages and the Python stubs from
the core's tables (`cargo run -p segflake --example tables`, i.e. `catalog::tables_json`).

  scripts/gen_declarations.py                 rewrite the generated parts
  scripts/gen_declarations.py --check         exit 1, showing the difference, if any is stale
  scripts/gen_declarations.py --tables FILE   read the tables from FILE instead of cargo

Generated:
  * npm/shared/tables.d.ts, whole: every option interface and record interface of both npm
    packages (each package's build ships it as tables.d.ts);
  * in python/segflake/_native.pyi, the lines between `# <generated: NAME>` and
    `# </generated>`: constructor keywords, TypedDict fields and record properties;
  * in bindings/python/src/*.rs, the `text_signature` literal that follows a
    `// <generated: text_signature NAME>` line;
  * one line per error kind between `<generated: NAME>` and `</generated>` comments where a
    binding lists its error classes: python/segflake/__init__.py (imports, __all__),
    npm/segflake-wasm/errors.js (classes, the kind table), npm/segflake-wasm/core.js, snowflake-core.js and
    npm/segflake/index.mjs (exports), and bindings/c/src/error.rs (the SEGFLAKE_* status
    constants cbindgen writes into include/segflake.h).
A new option is a row in the core's table, a new error kind a row in the core's error table:
this script writes their declarations; nothing else in the bindings is edited by hand.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
Row = Dict[str, Any]

# ---------------------------------------------------------------------------------------
# Types of each option kind and record field kind, per language. An override names the
# few options whose host type is narrower than their kind (an enumeration with an alias).

TS_OPTION_TYPES = {"integer": "number | bigint", "boolean": "boolean", "time": "TimeInput", "id": "IdInput"}
# LayoutOptions is also what `Layout.toJSON()` returns: its integers are numbers.
TS_INTEGER_BY_SET = {"layout": "number"}
TS_OPTION_OVERRIDES = {
    ("layout", "preset"): "PresetName",
    ("snowflake", "layout"): "PresetName | LayoutOptions | Layout",
}
TS_FIELD_TYPES = {"count": "number", "id": "bigint", "text": "string", "bool": "boolean", "float": "number"}
TS_FIELD_OVERRIDES = {("Layout", "order"): "'time-worker-sequence' | 'time-sequence-worker'"}

PY_OPTION_TYPES = {"integer": "int", "boolean": "bool", "time": "TimeInput", "id": "int", "layout": "LayoutInput"}
PY_OPTION_OVERRIDES = {
    ("layout", "preset"): "PresetName",
    ("layout", "order"): "FieldOrderName",
    ("snowflake", "sequence_start"): "SequenceStartName",
}
PY_FIELD_TYPES = {"count": "int", "id": "int", "text": "str", "bool": "bool", "float": "float"}
PY_FIELD_OVERRIDES = {("Layout", "order"): "FieldOrderName"}


def one_of(row: Row) -> Optional[List[str]]:
    """The values of an enumerated string option (`allowed` is "one of a, b, c")."""
    if row["type"] != "string" or not row["allowed"].startswith("one of "):
        return None
    return [v.strip() for v in row["allowed"][len("one of ") :].split(",")]


def ts_option_type(set_name: str, row: Row) -> str:
    override = TS_OPTION_OVERRIDES.get((set_name, row["name"]))
    if override:
        return override
    values = one_of(row)
    if values:
        return " | ".join(f"'{v}'" for v in values)
    if row["type"] == "integer" and set_name in TS_INTEGER_BY_SET:
        return TS_INTEGER_BY_SET[set_name]
    return TS_OPTION_TYPES[row["type"]]


def py_option_type(set_name: str, row: Row) -> str:
    override = PY_OPTION_OVERRIDES.get((set_name, row["name"]))
    if override:
        return override
    values = one_of(row)
    if values:
        return "Literal[" + ", ".join(f'"{v}"' for v in values) + "]"
    return PY_OPTION_TYPES[row["type"]]


def has_default(row: Row) -> bool:
    """Whether the default is a value (not "none", nor a description like "the preset's epoch")."""
    d = row["default"]
    if d is None or d == "none":
        return False
    if row["type"] == "integer":
        return re.fullmatch(r"-?\d+", d) is not None
    return row["type"] in ("boolean", "string", "layout")


def py_default(row: Row) -> str:
    if not has_default(row):
        return "None"
    d = row["default"]
    if row["type"] == "integer":
        return str(int(d))
    if row["type"] == "boolean":
        return "True" if d == "true" else "False"
    return f'"{d}"'


def sig_default(row: Row) -> str:
    """The default as Python's `text_signature` spells it (single-quoted strings)."""
    return py_default(row).replace('"', "'")


def option_doc(row: Row) -> str:
    """An option's documentation: the table's text, what is allowed and the default."""
    text = row["doc"].rstrip()
    if not text.endswith("."):
        text += "."
    allowed = row["allowed"]
    default = row["default"]
    extra = allowed[0].upper() + allowed[1:] if allowed else ""
    if default is not None and default != "none":
        extra += f"; default {default}"
    return f"{text} {extra}." if extra else text


def field_doc(row: Row) -> str:
    text = row["doc"].rstrip()
    return text if text.endswith(".") else text + "."


# ---------------------------------------------------------------------------------------
# TypeScript: npm/shared/tables.d.ts


def camel_names(tables: Dict[str, Any]) -> Dict[str, str]:
    """Every option and field name that JS spells differently (`worker_bits`: `workerBits`)."""
    rows = [r for rows in tables["options"].values() for r in rows]
    rows += [r for rows in tables["records"].values() for r in rows]
    return {r["name"]: r["camel"] for r in rows if r["name"] != r["camel"]}


def respell(text: str, camel: Dict[str, str]) -> str:
    """The table's text with option and field names as JS spells them."""
    return re.sub(r"\b[a-z]+(?:_[a-z0-9]+)+\b", lambda m: camel.get(m.group(0), m.group(0)), text)


def ts_doc(text: str, indent: str) -> List[str]:
    """A `/** */` comment, on one line when it fits 100 columns."""
    one = f"{indent}/** {text} */"
    if len(one) <= 100:
        return [one]
    body = textwrap.wrap(text, width=100 - len(indent) - 3, break_on_hyphens=False)
    return [f"{indent}/**"] + [f"{indent} * {line}" for line in body] + [f"{indent} */"]


def ts_options(tables: Dict[str, Any], set_name: str, name: str, doc: str) -> List[str]:
    out = ts_doc(doc, "") + [f"export interface {name} {{"]
    camel = camel_names(tables)
    for row in tables["options"][set_name]:
        if row["threads_only"]:
            continue  # JS has no threads to give a generator
        required = row["default"] is None
        out += ts_doc(respell(option_doc(row), camel), "  ")
        out.append(f"  {row['camel']}{'' if required else '?'}: {ts_option_type(set_name, row)}")
    return out + ["}"]


def ts_record(tables: Dict[str, Any], record: str, name: str, doc: str, getters: bool) -> List[str]:
    """A record's interface: plain properties (absent when optional), or read-only getters
    (null when optional)."""
    out = ts_doc(doc, "") + [f"export interface {name} {{"]
    camel = camel_names(tables)
    for row in tables["records"][record]:
        t = TS_FIELD_OVERRIDES.get((record, row["name"])) or TS_FIELD_TYPES[row["kind"]]
        out += ts_doc(respell(field_doc(row), camel), "  ")
        if getters:
            out.append(f"  readonly {row['camel']}: {t}{' | null' if row['optional'] else ''}")
        else:
            out.append(f"  {row['camel']}{'?' if row['optional'] else ''}: {t}")
    return out + ["}"]


def ts_errors(tables: Dict[str, Any]) -> List[List[str]]:
    """`ErrorCode`, the base class and one class per error kind (in status order)."""
    camel = camel_names(tables)
    kinds = tables["errors"]
    code = ["/** Every stable error code, one per error class. */", "export type ErrorCode ="]
    code += [f"  | '{k['code']}'" for k in kinds]
    base = [
        "/** Base class of every error segflake throws. */",
        "export declare class SegflakeError extends Error {",
        "  /** The stable machine-readable code of the error's class. */",
        "  readonly code: ErrorCode",
        "  static readonly code: ErrorCode | undefined",
        "}",
    ]
    classes = []
    for k in kinds:
        classes += ts_doc(respell(k["summary"], camel), "")
        classes.append(f"export declare class {k['class_name']} extends SegflakeError {{")
        classes.append(f"  readonly code: '{k['code']}'")
        classes.append("}")
    return [code, base, classes]


def tables_dts(tables: Dict[str, Any]) -> str:
    presets = one_of(next(r for r in tables["options"]["layout"] if r["name"] == "preset")) or []
    parts: List[List[str]] = [
        [
            "// The option, record and error declarations of both npm packages (segflake and segflake-wasm),",
            "// written by scripts/gen_declarations.py from the core's tables: do not edit; change the",
            "// table in crates/segflake and run the script. Each package ships this file as tables.d.ts.",
            "import type { Layout } from './index.js'",
        ],
        ["/** The layout presets. */", "export type PresetName = " + " | ".join(f"'{p}'" for p in presets)],
        [
            "/** A point in time: Unix milliseconds, a `Date`, or an ISO-8601 UTC string (`'2025-01-01'`). */",
            "export type TimeInput = number | bigint | string | Date",
        ],
        ["/** An ID: a bigint, a non-negative safe integer, or a decimal string. */",
         "export type IdInput = bigint | number | string"],
        ts_options(tables, "layout", "LayoutOptions",
                   "The parameters of a layout (`new Layout(...)`): a `preset` whose fields the others override."),
        ts_options(tables, "snowflake", "SnowflakeOptions", "Options of `new Snowflake(...)`."),
        ts_options(tables, "segment", "SegmentSettings",
                   "The segment options of `new SegmentGenerator(...)` (besides its `store`)."),
        ts_options(tables, "serial", "SerialSettings",
                   "The serial options of `new SerialGenerator(...)` (besides its `counter`)."),
        ts_options(tables, "lease", "LeaseOptions",
                   "Options of a leased generator besides the snowflake options (`Snowflake.fromRegistry`)."),
        ts_record(tables, "DecodedId", "DecodedId", "The fields of an ID.", False),
        ts_record(tables, "SegmentStats", "SegmentStats",
                  "A snapshot of one tag's segments. Ranges are half-open `[start, end)`.", False),
        ts_record(tables, "SerialParts", "SerialParts", "The fields of a serial.", False),
        ts_record(tables, "LeaseStats", "LeaseStats", "A leased generator's lease, for monitoring (`leaseStats()`).",
                  False),
        ts_record(tables, "Layout", "LayoutProperties", "The read-only properties of a `Layout`.", True),
        *ts_errors(tables),
    ]
    return "\n\n".join("\n".join(p) for p in parts) + "\n"


# ---------------------------------------------------------------------------------------
# Python: regions of _native.pyi and text_signature literals


def py_keywords(tables: Dict[str, Any], set_name: str, *, skip: Tuple[str, ...] = (), threads: bool = True,
                no_defaults: bool = False) -> List[str]:
    """Keyword parameters `name: Optional[T] = default,` of a constructor (8 spaces in)."""
    out = []
    for row in tables["options"][set_name]:
        if row["name"] in skip or (row["threads_only"] and not threads):
            continue
        default = "None" if no_defaults else py_default(row)
        out.append(f"        {row['name']}: Optional[{py_option_type(set_name, row)}] = {default},")
    return out


def py_typed_dict(tables: Dict[str, Any], set_name: str, *, skip: Tuple[str, ...] = ()) -> List[str]:
    out = []
    for row in tables["options"][set_name]:
        if row["name"] in skip:
            continue
        t = py_option_type(set_name, row)
        if row["threads_only"]:
            out += [f"    {row['name']}: NotRequired[{t}]", '    """Threaded generators only."""']
        else:
            out.append(f"    {row['name']}: {t}")
    return out


def py_docstring(text: str, indent: str) -> List[str]:
    one = f'{indent}"""{text}"""'
    if len(one) <= 100:
        return [one]
    lines = textwrap.wrap(text, width=100 - len(indent) - 6, break_on_hyphens=False)
    lines[0] = '"""' + lines[0]
    lines[-1] += '"""'
    return [indent + line for line in lines]


def py_properties(tables: Dict[str, Any], record: str) -> List[str]:
    out = []
    for row in tables["records"][record]:
        t = PY_FIELD_OVERRIDES.get((record, row["name"])) or PY_FIELD_TYPES[row["kind"]]
        if row["optional"]:
            t = f"Optional[{t}]"
        out += ["    @property", f"    def {row['name']}(self) -> {t}:"]
        out += py_docstring(field_doc(row), "        ")
    return out


def text_signature(tables: Dict[str, Any], head: List[str], set_names: List[str], *,
                   skip: Tuple[str, ...] = (), threads: bool = True, tail: List[str] = (),
                   no_defaults: Tuple[str, ...] = ()) -> str:
    params = list(head)
    if "*" not in params:
        params.append("*")
    for set_name in set_names:
        for row in tables["options"][set_name]:
            if row["name"] in skip or (row["threads_only"] and not threads):
                continue
            default = "None" if set_name in no_defaults else sig_default(row)
            params.append(f"{row['name']}={default}")
    params += list(tail)
    return "(" + ", ".join(params) + ")"


# Error classes that are also a builtin exception in Python.
PY_ERROR_BASES = {"INVALID_ARGUMENT": "SegflakeError, ValueError", "PARSE_ERROR": "SegflakeError, ValueError"}


def py_errors(tables: Dict[str, Any]) -> List[str]:
    """One exception class per error kind: the core's summary and the data it carries."""
    out: List[str] = []
    for k in tables["errors"]:
        out.append(f"class {k['class_name']}({PY_ERROR_BASES.get(k['code'], 'SegflakeError')}):")
        out += py_docstring(k["summary"], "    ")
        if k["details"]:
            out.append("")
            types = {"number": "int", "text": "str"}
            out += [f"    {d['name']}: {types[d['kind']]}" for d in k["details"]]
        out.append("")
    return out[:-1]


def pyi_regions(t: Dict[str, Any]) -> Dict[str, List[str]]:
    return {
        "error classes": py_errors(t),
        "LayoutDict": py_typed_dict(t, "layout"),
        "Layout options": py_keywords(t, "layout", skip=("preset",), no_defaults=True),
        "Layout properties": py_properties(t, "Layout"),
        "DecodedId properties": py_properties(t, "DecodedId"),
        "Snowflake options": py_keywords(t, "snowflake", skip=("worker_id",)),
        "from_registry options": py_keywords(t, "snowflake", skip=("worker_id", "datacenter_id"))
        + py_keywords(t, "lease"),
        "LeaseStats properties": py_properties(t, "LeaseStats"),
        "SegmentOptionsDict": py_typed_dict(t, "segment"),
        "SegmentStats properties": py_properties(t, "SegmentStats"),
        "SegmentGenerator options": py_keywords(t, "segment"),
        "SegmentEngine options": py_keywords(t, "segment", threads=False),
        "SerialParts properties": py_properties(t, "SerialParts"),
        "SerialGenerator options": py_keywords(t, "serial"),
    }


def error_lists(t: Dict[str, Any]) -> Dict[str, Dict[str, List[str]]]:
    """The lines each binding's error list holds, per file and region."""
    kinds = t["errors"]
    names = [k["class_name"] for k in kinds]
    py = sorted(names)
    status: List[str] = []
    for k in kinds:
        doc = k["summary"] + C_STATUS_EXTRA.get(k["code"], "")
        status += ["/// " + line for line in textwrap.wrap(doc, 96)]
        status.append(f"pub const SEGFLAKE_{k['code']}: segflake_status = {k['status']};")
    return {
        "python/segflake/__init__.py": {
            "error classes": ["from ._native import ("] + [f"    {n}," for n in py] + [")"],
            "error names": [f'    "{n}",' for n in py],
        },
        "npm/segflake-wasm/errors.js": {
            "error classes": [f"export class {n} extends SegflakeError {{}}" for n in names],
            "error kinds": [f"  [{k['class_name']}, '{k['class_name']}', '{k['code']}']," for k in kinds],
        },
        "npm/segflake-wasm/core.js": {"error classes": [f"  {n}," for n in names]},
        "npm/segflake-wasm/snowflake-core.js": {"error classes": [f"  {n}," for n in names]},
        "npm/segflake/index.mjs": {"error classes": [f"  {n}," for n in names]},
        "bindings/c/src/error.rs": {"status codes": status},
    }


#: What a status means through C beyond the core's summary.
C_STATUS_EXTRA = {
    "INVALID_ARGUMENT": " Through C also: a NULL pointer, a buffer that is too small, text that is "
    "not UTF-8.",
    "STORE_ERROR": " A store or counter callback returned it.",
    "UNKNOWN_TAG": " A store callback returns it for a tag it does not have.",
}


def signature_literals(t: Dict[str, Any]) -> Dict[str, str]:
    return {
        "Layout": text_signature(t, ["preset=None"], ["layout"], skip=("preset",), tail=["now_ms=None"],
                                 no_defaults=("layout",)),
        "Snowflake": text_signature(t, ["worker_id"], ["snowflake"], skip=("worker_id",), tail=["clock=None"]),
        "from_registry": text_signature(t, ["registry", "*", "owner=None"], ["snowflake", "lease"],
                                        skip=("worker_id", "datacenter_id"), tail=["clock=None"]),
        "SegmentGenerator": text_signature(t, ["store"], ["segment"]),
        "SegmentEngine": text_signature(t, ["tag", "stores=1"], ["segment"], threads=False),
        "SerialGenerator": text_signature(t, [], ["serial"], tail=["counter=None", "clock=None"]),
    }


def replace_regions(text: str, regions: Dict[str, List[str]], path: str, comment: str = "#") -> str:
    """Replaces each `# <generated: NAME>` ... `# </generated>` region's body (`//` for
    `comment="//"`)."""
    seen = set()

    def body(m: "re.Match[str]") -> str:
        name = m.group(2)
        if name not in regions:
            raise SystemExit(f"{path}: no generator for region {name!r}")
        seen.add(name)
        return m.group(1) + "".join(line + "\n" for line in regions[name]) + m.group(3)

    c = re.escape(comment)
    pattern = re.compile(rf"(^[ \t]*{c} <generated: ([^>]+)>\n)(?:.*?\n)??([ \t]*{c} </generated>\n)", re.M | re.S)
    out = pattern.sub(body, text)
    missing = set(regions) - seen
    if missing:
        raise SystemExit(f"{path}: regions missing: {', '.join(sorted(missing))}")
    return out


def rust_literal(value: str, first: int, indent: str) -> str:
    """A Rust string literal of `value` starting at column `first`, continued (`\\` at line
    ends) on lines indented by `indent`, none longer than 100 columns."""
    lines: List[str] = []
    line = ""
    for w in value.split(" "):
        candidate = f"{line} {w}" if line else w
        start = first + 1 if not lines else len(indent)
        if line and start + len(candidate) + 4 > 100:
            lines.append(line + " \\")
            line = w
        else:
            line = candidate
    lines.append(line)
    return '"' + f"\n{indent}".join(lines) + '"'


def replace_signatures(text: str, literals: Dict[str, str], seen: set) -> str:
    pattern = re.compile(r'^([ \t]*)// <generated: text_signature ([^>]+)>\n([ \t]*)text_signature = "(?:[^"\\]|\\.)*"',
                         re.M | re.S)

    def sub(m: "re.Match[str]") -> str:
        name = m.group(2)
        if name not in literals:
            raise SystemExit(f"no text_signature named {name!r}")
        seen.add(name)
        indent = m.group(3)
        head = f"{indent}text_signature = "
        return f"{m.group(1)}// <generated: text_signature {name}>\n{head}" + rust_literal(
            literals[name], len(head), indent + "    ")

    return pattern.sub(sub, text)


# ---------------------------------------------------------------------------------------


def load_tables(path: Optional[str]) -> Dict[str, Any]:
    if path:
        return json.loads(Path(path).read_text())
    out = subprocess.run(["cargo", "run", "--quiet", "-p", "segflake", "--example", "tables"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a generated part is out of date")
    ap.add_argument("--tables", help="the tables' JSON (default: cargo run -p segflake --example tables)")
    a = ap.parse_args()
    tables = load_tables(a.tables)

    files: Dict[Path, Callable[[str], str]] = {
        ROOT / "npm/shared/tables.d.ts": lambda _old: tables_dts(tables),
        ROOT / "python/segflake/_native.pyi": lambda old: replace_regions(old, pyi_regions(tables), "_native.pyi"),
    }
    for rel, regions in error_lists(tables).items():
        comment = "#" if rel.endswith(".py") else "//"
        files[ROOT / rel] = lambda old, r=regions, p=rel, c=comment: replace_regions(old, r, p, c)
    literals = signature_literals(tables)
    seen: set = set()
    for rs in sorted((ROOT / "bindings/python/src").glob("*.rs")):
        if "<generated: text_signature" in rs.read_text():
            files[rs] = lambda old: replace_signatures(old, literals, seen)

    stale = []
    for path, make in files.items():
        old = path.read_text() if path.exists() else ""
        new = make(old)
        if new == old:
            continue
        rel = str(path.relative_to(ROOT))
        if a.check:
            stale.append(rel)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), rel, rel + " (generated)"))
        else:
            path.write_text(new)
            print(f"wrote {rel}")
    missing = set(literals) - seen
    if missing:
        print(f"bindings/python/src: text_signature markers missing: {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    if stale:
        print(f"out of date (run scripts/gen_declarations.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
