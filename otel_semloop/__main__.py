"""``python -m otel_semloop``: the ``otel-semloop`` command."""

import sys

from otel_semloop.cli import main

sys.exit(main())
