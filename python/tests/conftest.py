import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

VECTORS = Path(os.environ.get("SEGFLAKE_VECTORS", Path(__file__).resolve().parents[2] / "tests" / "vectors"))


def load_vectors(name: str) -> Dict[str, Any]:
    path = VECTORS / name
    with open(path, encoding="utf-8") as f:
        data: Dict[str, Any] = json.load(f)
    return data


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    assert VECTORS.is_dir(), f"vectors not found at {VECTORS} (set SEGFLAKE_VECTORS)"
    return VECTORS
