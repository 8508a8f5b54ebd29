"""End-to-end test helpers: a scripted OpenAI-compatible server and OTLP receivers on loopback."""

import pytest

# The helpers assert on behalf of the tests: let pytest explain their failures.
pytest.register_assert_rewrite(*(f"{__name__}.{m}" for m in ("contract", "fixtures", "otlp_receiver")))
