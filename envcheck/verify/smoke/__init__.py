"""Smoke tests and measurements run on a live cluster (tasks shipped by value to workers)."""
