"""The packages' public names imported on first use (otel_semloop.lazy_exports)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_lazy_name_is_imported_on_first_read_and_then_kept() -> None:
    code = (
        "import sys, otel_semloop, otel_semloop.judges as judges, otel_semloop.service as service\n"
        "assert 'otel_semloop.processor' not in sys.modules and 'asyncio' not in sys.modules\n"
        "assert 'grpc' not in sys.modules and 'uvicorn' not in sys.modules\n"
        "from otel_semloop.processor import SemloopSpanProcessor\n"
        "assert otel_semloop.SemloopSpanProcessor is SemloopSpanProcessor\n"
        "assert 'SemloopSpanProcessor' in vars(otel_semloop)  # kept: no second lookup\n"
        "assert judges.Judge.__module__ == 'otel_semloop.judges.judge'\n"
        "assert service.ServiceConfig.__module__ == 'otel_semloop.service.config'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("package", ["otel_semloop", "otel_semloop.judges", "otel_semloop.service"])
def test_an_unknown_name_raises_what_python_would(package: str) -> None:
    module = __import__(package, fromlist=["_"])
    with pytest.raises(AttributeError, match=rf"^module '{package}' has no attribute 'not_there'$"):
        module.not_there  # noqa: B018
