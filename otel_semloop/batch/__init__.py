"""``otel-semloop rescore``: exported OTLP files scored after the fact (its modules are listed
in ``docs/architecture.md``; the command is :mod:`.run`)."""
