"""Loop detectors: each reads one agent trace and reports what it found."""
