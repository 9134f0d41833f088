"""Checks of the final command: what a launcher would run, judged before any GPU starts.

A layer above ``matrix``, ``engines`` and ``evals``: it builds every job's ServerSpec with
the engine adapters and judges it (``served``: the policy rules over argv, env and image;
``argv``: the engines' own argument parsers, rule ``engine-argv``; ``verification``: an
eval server verifies drafts for real).
"""
