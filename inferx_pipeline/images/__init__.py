"""Container images a recipe runs: references, tag tracking, registries, image history.

Knows nothing of Dagster; sensors and the CLI call it.

- ``refs``: ``ImageRef`` parses ``[registry/]repository[:tag][@digest]`` and keeps the spelling.
- ``tracking``: ``TrackRule`` (a recipe's ``engine.track``) and ``admits``.
- ``registry``: the ``RegistryClient`` protocol, ``HttpRegistry`` (Registry HTTP API v2)
  and ``Registries`` (the client per registry host); ``config``: ``RegistryConfig``.
- ``fake``: ``FakeRegistry``, an in-memory client for other layers' tests.
- ``changelog``: images an InferenceX perf-changelog.yaml names for a recipe.
- ``history``: ``ImageHistoryEntry`` rows from the pinned image, git, the changelog and
  the registry.

Nothing is re-exported here: ``recipes.schema`` imports ``images.tracking`` while
``images.history`` reads recipes, so importing the package must not import ``history``.
"""
