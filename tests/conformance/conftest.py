"""Fixtures of the final-command checks: the eval tests' catalog, eval catalog and specs."""

from tests.evals.conftest import catalog, evals, spec_of

__all__ = ["catalog", "evals", "spec_of"]
