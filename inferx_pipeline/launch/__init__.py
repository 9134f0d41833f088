"""Launchers: start a ``ServerSpec`` and hand back a ``ServerHandle`` (knows nothing of recipes).

- ``base``: the ``Launcher`` protocol, ``ServerHandle`` (base URL, logs, health wait,
  exit status, stop; a context manager), ``{port}`` filling and ``free_port``, the log buffer.
- ``subprocess``: child processes (the embedded simulator, port 0 read back from stdout).
- ``docker`` / ``docker_args``: containers through docker-py; labels, orphan cleanup.
- ``gpu``: the vendor's GPU access block (pure). ``pools``: Docker hosts per SKU.
- ``preflight`` / ``docker_probe`` / ``probes.yaml``: image facts read before GPU start.
- ``fake``: fake launcher and probe runner for other layers' tests. ``config``: ``kind``s.
"""
