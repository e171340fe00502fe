"""Worker IDs from an environment variable (Kubernetes' pod index through the downward API):
the core's messages, unchanged."""

import os

import pytest

import segflake
from segflake import InvalidArgumentError, WorkerIdOutOfRangeError

EXPECTED = "expected a decimal worker ID 0..=1023, such as the pod index 3"


def test_worker_id_from_text() -> None:
    assert segflake.worker_id_from_text("POD_INDEX", "3") == 3
    assert segflake.worker_id_from_text("POD_INDEX", "007", 10) == 7
    assert segflake.worker_id_from_text("POD_INDEX", "65535", 16) == 65535
    with pytest.raises(InvalidArgumentError) as e:
        segflake.worker_id_from_text("POD_INDEX", None)
    assert str(e.value) == f"invalid POD_INDEX: POD_INDEX is not set; {EXPECTED}"
    with pytest.raises(InvalidArgumentError) as e:
        segflake.worker_id_from_text("POD_INDEX", "web-3")
    assert str(e.value) == f'invalid POD_INDEX: POD_INDEX="web-3" is not a decimal number; {EXPECTED}'
    with pytest.raises(InvalidArgumentError, match="POD_INDEX is empty"):
        segflake.worker_id_from_text("POD_INDEX", "")
    with pytest.raises(WorkerIdOutOfRangeError) as r:
        segflake.worker_id_from_text("POD_INDEX", "8", 3)
    assert str(r.value) == "worker id 8 is out of range: the layout has 3 worker bits, so worker ids are 0..=7"
    with pytest.raises(InvalidArgumentError, match="0..=63"):
        segflake.worker_id_from_text("POD_INDEX", "1", 64)
    with pytest.raises(InvalidArgumentError, match="name"):
        segflake.worker_id_from_text(7, "1")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="text"):
        segflake.worker_id_from_text("POD_INDEX", 3)  # type: ignore[arg-type]


def test_worker_id_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGFLAKE_TEST_POD_INDEX", "12")
    assert segflake.worker_id_from_env("SEGFLAKE_TEST_POD_INDEX") == 12
    assert os.environ["SEGFLAKE_TEST_POD_INDEX"] == "12"
    monkeypatch.setenv("SEGFLAKE_TEST_POD_INDEX", "1024")
    with pytest.raises(WorkerIdOutOfRangeError, match="0..=1023"):
        segflake.worker_id_from_env("SEGFLAKE_TEST_POD_INDEX")
    assert segflake.worker_id_from_env("SEGFLAKE_TEST_POD_INDEX", 11) == 1024
    monkeypatch.delenv("SEGFLAKE_TEST_POD_INDEX")
    with pytest.raises(InvalidArgumentError, match="SEGFLAKE_TEST_POD_INDEX is not set"):
        segflake.worker_id_from_env("SEGFLAKE_TEST_POD_INDEX")
