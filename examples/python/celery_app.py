"""segflake in Celery workers (the prefork pool, Celery's default): each pool process builds
its own generators after the fork, from `worker_process_init`.

    pip install "segflake[postgres,redis]" "celery[redis]"
    SEGFLAKE_PG_URL=postgresql://app@db/app SEGFLAKE_REDIS_URL=redis://cache:6379/0 \\
        celery -A celery_app worker --concurrency 4

    from celery_app import order_ids, snowflake_ids
    order_ids.delay(10).get()          # {"pid": ..., "ids": ["1001", ...]}

A generator made at import time lives in the pool's parent and is copied into every child
by fork(): segflake detects the copy and refuses to issue from it (ClosedError, whose
message says to build one per process) instead of letting two processes issue the same
IDs. Building them in `worker_process_init` is that fix. Each pool process leases its own
snowflake worker ID from Redis and draws its own segments from PostgreSQL; a process that
Celery replaces (`--max-tasks-per-child`) releases its lease on the way out.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from celery import Celery
from celery.signals import worker_process_init, worker_process_shutdown

import segflake
from segflake import registries, stores

PG_URL = os.environ.get("SEGFLAKE_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("SEGFLAKE_REDIS_URL", "redis://127.0.0.1:6379/0")
BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1")
TAG = os.environ.get("SEGFLAKE_TAG", "order")

app = Celery("segflake_example", broker=BROKER_URL, backend=os.environ.get("CELERY_RESULT_BACKEND", BROKER_URL))
app.conf.broker_connection_retry_on_startup = True

# This process's generators (None in the pool's parent, which never issues IDs).
snowflake: Optional[segflake.Snowflake] = None
segments: Optional[segflake.SegmentGenerator] = None


@worker_process_init.connect
def start_generators(**_: Any) -> None:
    global snowflake, segments
    snowflake = segflake.Snowflake.from_registry(registries.RedisRegistry(REDIS_URL))
    segments = segflake.SegmentGenerator(stores.PostgresStore(PG_URL, timeout=2.0, create_missing_tags=1000))


@worker_process_shutdown.connect
def stop_generators(**_: Any) -> None:
    # Releases the worker ID, so a replacement process can take it at once.
    for gen in (snowflake, segments):
        if gen is not None:
            gen.close()


Answer = Dict[str, Union[int, List[str]]]


@app.task
def order_ids(n: int) -> Answer:
    """`n` dense IDs of the tag (decimal strings: a JSON number loses precision above 2^53)."""
    assert segments is not None, "worker_process_init did not run"
    return {"pid": os.getpid(), "ids": [str(i) for i in segments.next_ids(TAG, n)]}


@app.task
def snowflake_ids(n: int) -> Answer:
    """`n` snowflake IDs under this process's leased worker ID."""
    assert snowflake is not None, "worker_process_init did not run"
    return {"pid": os.getpid(), "worker_id": snowflake.worker_id, "ids": [str(i) for i in snowflake.next_ids(n)]}
