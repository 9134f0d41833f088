"""Paths the tests read: the checkout root and the InferenceX data beside it (../shared)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# CI clones main into a fresh folder with a copy of shared/ beside it, as on a developer machine.
INFERENCEX = ROOT.parent / "shared" / "inferencex"
