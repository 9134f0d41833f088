"""Sweep execution: server groups, lifecycle, statuses, artifacts, reuse and ``run_sweep``."""
