"""End-to-end test helpers: a scripted OpenAI-compatible server and OTLP receivers on loopback."""
