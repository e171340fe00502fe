"""segflake in a FastAPI service: dense per-tag IDs from PostgreSQL (Leaf's segment mode)
and snowflake IDs under a worker ID leased from Redis, with nothing blocking the event loop.

    pip install "segflake[postgres,redis]" fastapi uvicorn
    SEGFLAKE_PG_URL=postgresql://app@db/app SEGFLAKE_REDIS_URL=redis://cache:6379/0 \\
        uvicorn fastapi_app:app --workers 4          # or: gunicorn -k uvicorn.workers.UvicornWorker -w 4

    GET /ids/{tag}?n=10    {"ids": ["1001", ...]}   dense, increasing per tag (503 while the
                                                    database is down and the buffer is empty)
    GET /snowflake?n=10    {"ids": [...], "worker_id": 7}
    GET /healthz           200 while the process runs
    GET /readyz            200 while this process holds its worker-ID lease, 503 otherwise

Each worker process builds its own generators in the lifespan handler, after uvicorn or
gunicorn forked it; a generator made at import time in a preloading master would be
inherited by every worker, and segflake refuses to issue from an inherited generator
(ClosedError) rather than issue the same IDs twice. Every store, registry and counter call
is awaited on the loop with a deadline; a PostgreSQL outage costs only requests that arrive
after the buffered segment runs out, and those get a 503 at once, not a stalled loop.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import AsyncIterator, Dict, List, Union

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse

import segflake
from segflake import aio_registries, stores

PG_URL = os.environ.get("SEGFLAKE_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("SEGFLAKE_REDIS_URL", "redis://127.0.0.1:6379/0")
#: Tags this service hands out; a request for another tag is a 404 before any store call.
TAGS = frozenset(os.environ.get("SEGFLAKE_TAGS", "order,invoice").split(","))
#: IDs per database round trip: unset, Leaf's dynamic step (each segment sized to last
#: about 15 minutes at the current rate); a number, that many every time.
STEP = int(os.environ.get("SEGFLAKE_SEGMENT_STEP", "0")) or None

# A JSON number loses precision above 2^53: IDs travel as decimal strings.
IdList = Dict[str, Union[List[str], int]]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # create_missing_tags: a tag with no leaf_alloc row gets one on first use (step 1000).
    store = stores.AsyncPostgresStore(PG_URL, timeout=2.0, create_missing_tags=1000)
    ids = segflake.AsyncSegmentGenerator(
        store, step=STEP, dynamic_step=STEP is None, wait_timeout_ms=2500, store_timeout_ms=2500
    )
    registry = aio_registries.AsyncRedisRegistry(REDIS_URL)
    snowflake = await segflake.from_registry_async(registry)
    app.state.ids, app.state.snowflake = ids, snowflake
    try:
        yield
    finally:
        # The lease is released so a restarted worker can take the same worker ID at once.
        await segflake.close_async(snowflake)
        await registry.aclose()
        await ids.aclose()
        await store.aclose()


app = FastAPI(title="segflake example", lifespan=lifespan)

# Which HTTP status each segflake error becomes: the caller's fault, an unknown tag, or
# "try again shortly" (the store, the registry or the clock); anything else is a bug.
STATUS = {
    "INVALID_ARGUMENT": 400,
    "UNKNOWN_TAG": 404,
    "SEGMENTS_EXHAUSTED": 503,
    "STORE_ERROR": 503,
    "LEASE_EXPIRED": 503,
    "REGISTRY_LOST_DATA": 503,
    "CLOCK_MOVED_BACKWARDS": 503,
    "CLOCK_BEHIND_MARK": 503,
    "CLOCK_SKEW": 503,
    "CLOSED": 503,
}


@app.exception_handler(segflake.SegflakeError)
async def segflake_error(request: Request, exc: segflake.SegflakeError) -> JSONResponse:
    status = STATUS.get(exc.code, 500)
    headers = {"retry-after": "1"} if status == 503 else None
    return JSONResponse({"code": exc.code, "message": str(exc)}, status_code=status, headers=headers)


@app.get("/ids/{tag}")
async def segment_ids(tag: str, n: int = Query(1, ge=1, le=1000)) -> IdList:
    if tag not in TAGS:
        raise HTTPException(404, f"unknown tag {tag!r}; this service hands out {sorted(TAGS)}")
    got = await app.state.ids.next_ids(tag, n)
    return {"ids": [str(i) for i in got]}


@app.get("/snowflake")
async def snowflake_ids(n: int = Query(1, ge=1, le=1000)) -> IdList:
    # A leased snowflake issues from memory (no I/O): a plain call on the loop is right.
    gen: segflake.Snowflake = app.state.snowflake
    return {"ids": [str(i) for i in gen.next_ids(n)], "worker_id": gen.worker_id}


@app.get("/healthz")
async def healthz() -> Dict[str, str]:
    return {"status": "ok"}


@app.get("/readyz")
async def readyz() -> JSONResponse:
    lease = app.state.snowflake.lease_stats()
    ready = lease is not None and lease.state == "held"
    body = {"state": lease and lease.state, "worker_id": lease and lease.worker_id}
    return JSONResponse(body, 200 if ready else 503)
