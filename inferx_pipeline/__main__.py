"""``python -m inferx_pipeline`` runs the ``inferx`` command."""

from inferx_pipeline.cli import main

main()
