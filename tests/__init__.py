"""Test package (importable as ``tests.*`` so helpers are imported by their full name)."""
