"""Container images a recipe runs: references, tag tracking, registries, changelog.

Knows nothing of recipes or Dagster; recipes, sensors and the CLI call it.

- ``refs``: ``ImageRef`` parses ``[registry/]repository[:tag][@digest]`` and keeps the spelling.
- ``tracking``: ``TrackRule`` (a recipe's ``engine.track``) and ``admits``.
- ``registry``: the ``RegistryClient`` protocol, ``HttpRegistry`` (Registry HTTP API v2)
  and ``Registries`` (the client per registry host); ``config``: ``RegistryConfig``.
- ``fake``: ``FakeRegistry``, an in-memory client for other layers' tests.
- ``changelog``: images an InferenceX perf-changelog.yaml names for a recipe.

Below ``recipes`` (whose schema uses ``tracking``): a recipe's image history, which reads
recipes, is ``recipes.image_history``.
"""
