"""Sweep execution: server groups, lifecycle, statuses, artifacts, reuse and ``run_sweep``.

Backends (``backends``), runner-pool routing (``pooled``), and the image preflight
(``preflight`` running the rules of ``image_policy``) decide where and whether a group runs.
"""
