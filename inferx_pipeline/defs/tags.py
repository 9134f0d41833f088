"""Run tags this pipeline sets and reads, in one place."""

from __future__ import annotations

# Why a run was requested: a sensor's trigger, a backfill, the command line.
REASON_TAG = "inferx/reason"
# A run the merged-recipe sensor requested measures the recipes as of this commit.
COMMIT_TAG = "inferx/commit"
# Retries of a failed sweep run: how many so far, and of which run.
RETRY_TAG = "inferx/retry"
RETRY_OF_TAG = "inferx/retry-of"
# How a sweep run measured, whatever launched it (set by the sweep asset; defs/config.py).
SKU_TAG = "inferx/sku"
LAUNCHER_TAG = "inferx/launcher"
ROOT_TAG = "inferx/root"
OPTIONS_TAG = "inferx/options"
# The version of the rules that judged the run's points (sweep policy + bench validity).
POLICY_TAG = "inferx/validity-policy"
