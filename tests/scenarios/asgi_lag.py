"""The example FastAPI app (examples/python/fastapi_app.py) with an event-loop lag probe, for
the frameworks scenarios: served as `asgi_lag:app` by uvicorn or gunicorn from this
directory. Each worker process runs a 10 ms ticker on its loop beside the app and, when the
server shuts it down, writes `lag-<pid>.json` into $SCEN_LAG_DIR: every tick's wall time
(Unix s) and how late it came (ms). The app itself is imported unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))

from fastapi_app import app as example  # noqa: E402

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

samples: List[Tuple[float, float]] = []


async def tick() -> None:
    last = time.monotonic()
    while True:
        await asyncio.sleep(0.01)
        now = time.monotonic()
        samples.append((round(time.time(), 3), round(max(0.0, now - last - 0.01) * 1000, 2)))
        last = now


def write_samples() -> None:
    out: Dict[str, Any] = {"pid": os.getpid(), "samples": samples}
    with open(os.path.join(os.environ["SCEN_LAG_DIR"], f"lag-{os.getpid()}.json"), "w") as f:
        json.dump(out, f)


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "lifespan":
        await example(scope, receive, send)
        return
    ticker = asyncio.get_running_loop().create_task(tick())

    async def send_after_shutdown(message: Message) -> None:
        if message["type"].startswith("lifespan.shutdown"):
            ticker.cancel()
            write_samples()
        await send(message)

    await example(scope, receive, send_after_shutdown)
