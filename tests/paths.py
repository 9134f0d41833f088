"""Paths the tests read: the checkout root and InferenceX's reference data inside it."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# InferenceX's configs, changelog, golden curves and generator outputs, copied into the
# repository with their upstream commit and license (third_party/inferencex/README.md).
INFERENCEX = ROOT / "third_party" / "inferencex"
