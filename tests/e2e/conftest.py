"""Fixtures of the end-to-end tests: a scripted OpenAI server, a real OTLP receiver (gRPC and
HTTP) and an instrumented pipeline exporting to it (defined in :mod:`tests.e2e.fixtures`)."""

from tests.e2e.fixtures import fake_openai, otlp_receiver, pipeline

__all__ = ["fake_openai", "otlp_receiver", "pipeline"]
