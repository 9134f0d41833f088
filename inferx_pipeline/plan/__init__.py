"""The checked matrix a person asks for: above ``conformance``, so every job it returns
has had its final server command judged.

- ``build``: ``MatrixRequest`` -> ``build_matrix`` / ``load_matrix`` (recipes loaded, final
  commands judged, expanded, selected): ``inferx matrix`` and the ``sweep_matrix`` asset.
- ``crosscheck``: what ``inferx validate`` checks beyond one recipe.
- ``render``: a matrix as a table, JSON, CSV (with each job's server command) or
  InferenceX rows.
- ``cache``: ``inferx matrix``'s printed text by command and input bytes (stdlib only),
  so a repeat run with unchanged inputs skips all of the above.
"""
