"""What a pull request runs, before any forge or sweep: pure domain, above ``plan``.

- ``labels``: ``catalog/pr-labels.yaml`` -> ``LabelRules``; a PR's labels and head commit
  message -> ``pr_mode`` (``PrRun``, or ``PrIdle`` for a skip or no primary label).
- ``changelog``: the entries a PR adds to InferenceX's append-only ``perf-changelog.yaml``.
- ``scope``: the head tree and changed paths -> ``pr_scope`` (affected recipes, their
  sources, their jobs), for this project's layout or InferenceX's.
- ``plan``: a scope's jobs and a ``PrRun`` -> ``pr_plan`` (canary first, the rest, fail-fast).
"""
