"""Load an OTLP JSON lines file (``otel-semloop rescore`` output) into a backend over OTLP/HTTP.

    otel-semloop rescore traces.jsonl -o scored.jsonl
    python examples/jaeger/load_file.py scored.jsonl http://localhost:14318/v1/traces

Each line of a Collector file-exporter file is one ``TracesData``, which is also a valid
OTLP/HTTP JSON request body (``ExportTraceServiceRequest`` has the same fields), so the file
is posted line by line, unchanged. Standard library only.
"""

from __future__ import annotations

import sys
import urllib.request


def main(path: str, url: str) -> int:
    sent = 0
    with open(path, "rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            request = urllib.request.Request(
                url, data=line, headers={"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            sent += 1
    print(f"posted {sent} lines to {url}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
