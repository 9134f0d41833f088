"""Parse ``vllm serve`` argv lists with vLLM's own parser (run by vLLM's Python, not ours).

Reads a JSON list of requests ``{"argv": [...]}`` (each argv starting at ``serve``) on
stdin and writes one JSON verdict per argv to stdout: ``{"ok": true}`` or ``{"ok":
false, "error": "..."}``. Each argv goes through what ``vllm serve`` does before it
loads a model: the serve subcommand's ``FlexibleArgumentParser`` (``make_arg_parser``)
and its post-parse validation (``validate_parsed_serve_args``). The parser is built once:
importing vLLM takes most of the time.

Standalone on purpose: the interpreter running it has vLLM, not this project.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def main() -> None:
    """Answer the argv lists on stdin (see the module docstring)."""
    # Deferred: the project's own venv (linters, type checks) has no vLLM.
    from vllm.entrypoints.cli.serve import ServeSubcommand  # type: ignore[import-not-found]
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]

    parser = FlexibleArgumentParser(prog="vllm")
    command = ServeSubcommand()
    command.subparser_init(parser.add_subparsers(dest="subparser"))
    verdicts = []
    for request in json.load(sys.stdin):
        argv = request["argv"]
        errors = io.StringIO()
        try:
            # argparse reports a rejected flag on stderr and exits 2.
            with contextlib.redirect_stderr(errors):
                args = parser.parse_args(argv)
            command.validate(args)
        except SystemExit:
            lines = errors.getvalue().strip().splitlines()
            verdicts.append({"ok": False, "error": lines[-1] if lines else "rejected"})
        except Exception as err:  # any validation failure is a verdict, whatever its type
            verdicts.append({"ok": False, "error": f"{type(err).__name__}: {err}"})
        else:
            verdicts.append({"ok": True})
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
