"""Runs the code blocks of markdown guides (docs/migrate/*.md), so the guides cannot rot.

  run_docs.py --cli SEGFLAKE --node-dir DIR --out DIR [--python PY] [--timeout S] FILE.md...
  run_docs.py --list FILE.md...

Every fenced block tagged ```python, ```js or ```sh runs, in the order of its guide:
``python`` with PY, ``js`` as an ES module (.mjs) placed inside the Node project DIR (so
``import ... from 'segflake'`` resolves), ``sh`` with ``bash -e -u -o pipefail`` and
``segflake`` on PATH. Other tags (``java``, ``toml``, ``text``...) never run. A fence
without a tag, or with a tag that looks runnable but is not one of the three (``bash``,
``py``, ``javascript``...), is an error: nothing meant to run can be skipped silently.

The blocks of one guide share a working directory and the environment (plus
SEGFLAKE_SERVE_ADDR / SEGFLAKE_SERVE_URL, a free local port for a `segflake serve`), so a
block may start a server another block uses. Each block runs in its own process group;
whatever a guide's blocks left running is stopped when the guide ends. A failing block
stops its guide (later blocks build on it) and is reported with the guide, the line of
its fence and its stderr; the other guides still run. The last line is the summary; the
exit status is 1 if any block failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

RUNNABLE = ("python", "js", "sh")
# Tags that read as runnable code but would be skipped: refused, so a guide says which.
LOOKALIKES = {
    "py": "python", "python3": "python", "pycon": "python", "javascript": "js", "mjs": "js",
    "node": "js", "jsx": "js", "ts": "js", "typescript": "js", "bash": "sh", "shell": "sh",
    "zsh": "sh", "console": "sh", "shell-session": "sh", "shellsession": "sh",
}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


class GuideError(Exception):
    pass


def parse(path: str) -> List[Block]:
    """The fenced blocks of a markdown file, runnable or not (lang is the info's first word)."""
    blocks: List[Block] = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        indent, fence, info = len(m.group("indent")), m.group("fence"), m.group("info").strip()
        start = i + 1
        body: List[str] = []
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group("fence")[0] == fence[0] and len(c.group("fence")) >= len(fence) \
                    and not c.group("info").strip():
                break
            text = lines[i]
            strip = min(indent, len(text) - len(text.lstrip(" ")))
            body.append(text[strip:])
            i += 1
        else:
            raise GuideError(f"{path}:{start}: the code block opened here is never closed")
        i += 1
        lang = info.split()[0] if info else ""
        if not lang:
            raise GuideError(
                f"{path}:{start}: a code block without a tag; tag it ```python, ```js or ```sh "
                "(runs in CI) or ```text, ```java, ```toml... (never runs)"
            )
        if lang in LOOKALIKES:
            raise GuideError(
                f"{path}:{start}: ```{lang} would never run; write ```{LOOKALIKES[lang]} (runs in CI) "
                "or ```text (never runs)"
            )
        blocks.append(Block(path, start, lang, "\n".join(body) + "\n"))
    return blocks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: str, n: int = 40) -> str:
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return ""
    lines = text.rstrip("\n").split("\n")
    cut = lines[-n:]
    return ("  ...\n" if len(lines) > n else "") + "\n".join("  | " + l for l in cut) if text.strip() else ""


def stop_groups(pgids: List[int]) -> None:
    """Stops what a guide's blocks left running: SIGTERM to each of their process groups,
    then SIGKILL after 5 s."""
    alive = []
    for g in pgids:
        try:
            os.killpg(g, signal.SIGTERM)
            alive.append(g)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 5
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        still = []
        for g in alive:
            try:
                os.killpg(g, 0)
                still.append(g)
            except (ProcessLookupError, PermissionError):
                pass
        alive = still
    for g in alive:
        try:
            os.killpg(g, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Runner:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.out = os.path.abspath(a.out)
        self.bin = os.path.join(self.out, "bin")
        os.makedirs(self.bin, exist_ok=True)
        link = os.path.join(self.bin, "segflake")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(a.cli), link)
        # ES modules resolve bare imports from their own location: the .mjs files live in
        # a folder inside the Node project that has segflake and the database clients.
        self.js_dir = tempfile.mkdtemp(prefix=".docs-blocks-", dir=os.path.abspath(a.node_dir))
        self.counts: Dict[str, int] = {lang: 0 for lang in RUNNABLE}
        self.failed: List[str] = []

    def close(self) -> None:
        shutil.rmtree(self.js_dir, ignore_errors=True)

    def command(self, block: Block, stem: str) -> List[str]:
        name = f"{stem}-{block.line}"
        if block.lang == "python":
            path = os.path.join(self.out, stem, name + ".py")
            open(path, "w").write(block.code)
            return [self.a.python, path]
        if block.lang == "js":
            path = os.path.join(self.js_dir, name + ".mjs")
            open(path, "w").write(block.code)
            shutil.copy(path, os.path.join(self.out, stem, name + ".mjs"))
            return ["node", path]
        path = os.path.join(self.out, stem, name + ".sh")
        open(path, "w").write(block.code)
        return ["bash", "-e", "-u", "-o", "pipefail", path]

    def guide(self, path: str, blocks: List[Block]) -> None:
        stem = os.path.splitext(os.path.basename(path))[0]
        work = os.path.join(self.out, stem, "work")
        shutil.rmtree(os.path.join(self.out, stem), ignore_errors=True)
        os.makedirs(work)
        port = free_port()
        env = dict(os.environ)
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env["SEGFLAKE_SERVE_ADDR"] = f"127.0.0.1:{port}"
        env["SEGFLAKE_SERVE_URL"] = f"http://127.0.0.1:{port}"
        groups: List[int] = []
        try:
            for b in blocks:
                if b.lang not in RUNNABLE:
                    continue
                cmd = self.command(b, stem)
                log = os.path.join(self.out, stem, f"{stem}-{b.line}")
                t0 = time.monotonic()
                with open(log + ".stdout", "w") as so, open(log + ".stderr", "w") as se:
                    p = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=so,
                                         stderr=se, start_new_session=True)
                    groups.append(p.pid)
                    try:
                        rc: Optional[int] = p.wait(timeout=self.a.timeout)
                    except subprocess.TimeoutExpired:
                        stop_groups([p.pid])
                        p.wait()
                        rc = None
                took = time.monotonic() - t0
                self.counts[b.lang] += 1
                if rc == 0:
                    print(f"ok   {b.where} ```{b.lang} ({took:.1f} s)", flush=True)
                    continue
                why = f"timed out after {self.a.timeout} s" if rc is None else f"exit status {rc}"
                self.failed.append(b.where)
                print(f"FAIL {b.where} ```{b.lang}: {why}", flush=True)
                err, out = tail(log + ".stderr"), tail(log + ".stdout", 15)
                print(f"  stderr of {b.where}:\n{err or '  (empty)'}", flush=True)
                if out:
                    print(f"  stdout of {b.where}:\n{out}", flush=True)
                skipped = sum(1 for x in blocks if x.lang in RUNNABLE and x.line > b.line)
                if skipped:
                    print(f"  ({skipped} later blocks of {path} not run)", flush=True)
                return
        finally:
            stop_groups(groups)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--cli", help="the segflake CLI binary (on PATH as `segflake` in sh blocks)")
    ap.add_argument("--node-dir", help="a Node project with segflake and the database clients installed")
    ap.add_argument("--python", default=sys.executable, help="the Python with segflake (default: this one)")
    ap.add_argument("--out", help="working folder: the blocks as files, their output, their working directories")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds one block may run (default 180)")
    ap.add_argument("--list", action="store_true", help="only list the runnable blocks")
    a = ap.parse_args()
    guides = []
    try:
        for f in a.files:
            guides.append((f, parse(f)))
    except GuideError as e:
        print(f"FAIL {e}", flush=True)
        print("docs: a guide does not parse", flush=True)
        return 1
    if a.list:
        for f, blocks in guides:
            for b in blocks:
                if b.lang in RUNNABLE:
                    print(f"{b.where} ```{b.lang} ({b.code.count(chr(10))} lines)")
        return 0
    if not (a.cli and a.node_dir and a.out):
        ap.error("--cli, --node-dir and --out are required to run the blocks")
    for f, blocks in guides:
        # Every guide shows code that runs; an index (README.md) need not.
        if os.path.basename(f) != "README.md" and not any(b.lang in RUNNABLE for b in blocks):
            print(f"FAIL {f}: no ```python, ```js or ```sh block to run", flush=True)
            print("docs: a guide has nothing to run", flush=True)
            return 1
    r = Runner(a)
    # A TERM (the scenario runner stopping) ends the current guide's processes too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for f, blocks in guides:
            r.guide(f, blocks)
    finally:
        r.close()
    ran = sum(r.counts.values())
    per = ", ".join(f"{lang} {r.counts[lang]}" for lang in RUNNABLE)
    total = sum(1 for _, bs in guides for b in bs if b.lang in RUNNABLE)
    n_guides = sum(1 for _, bs in guides if any(b.lang in RUNNABLE for b in bs))
    if r.failed:
        print(f"docs: {len(r.failed)} of {total} blocks failed ({', '.join(r.failed)}); "
              f"{ran - len(r.failed)} ran green ({per} ran) in {n_guides} guides", flush=True)
        return 1
    print(f"docs: all {ran} blocks ran green ({per}) in {n_guides} guides", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
