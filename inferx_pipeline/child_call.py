"""Run one function call in a fresh Python process: ``call_in_child(function, *args)``.

For CPU-bound work another core can do beside this process (the site build's current
half runs so while this process does the history half). The child is ``python -m
inferx_pipeline.child_call``: it reads the pickled call on stdin, runs it and writes the
pickled outcome on stdout. Unlike ``multiprocessing`` it never forks this process (a
Dagster run worker has threads, and a fork can inherit a lock another thread held), never
imports this process's ``__main__`` again (a caller's script without a ``__main__`` guard
would run twice), and leaves no server process behind.

The function must be importable by name (module level) and its arguments picklable.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def call_in_child(function: Callable[..., T], *args: object) -> T:
    """``function(*args)``, computed in a child process.

    The child's exception is raised here as it was raised there, with its traceback added
    as a note; a result that does not pickle raises pickle's error the same way, and an
    exception that does not pickle comes as a ChildProcessError holding its text.
    ChildProcessError too when the child ended without an answer (killed, out of memory,
    or the call did not unpickle there). The child's stderr is this process's.
    """
    payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
    done = subprocess.run(
        [sys.executable, "-m", __name__], input=payload, stdout=subprocess.PIPE, check=False
    )
    name = f"{function.__module__}.{function.__qualname__}"
    if done.returncode != 0 or not done.stdout:
        raise ChildProcessError(
            f"{name}: its child process exited with status {done.returncode} before it "
            "answered (killed, or out of memory?); see the lines above for its own error"
        )
    ok, value = pickle.loads(done.stdout)
    if not ok:
        raise value
    result: T = value
    return result


def _outcome(function: Callable[..., object], args: tuple[object, ...]) -> bytes:
    """The pickled (ok, value): the result, or the exception with its traceback as a note."""
    try:
        return pickle.dumps((True, function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:  # every error goes back to the caller
        err.add_note("in the child process:\n" + "".join(traceback.format_exception(err)))
        try:
            data = pickle.dumps((False, err), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(data)  # an exception class whose arguments do not rebuild it
        except Exception:  # then its text, as a ChildProcessError
            return pickle.dumps(
                (False, ChildProcessError("".join(traceback.format_exception(err))))
            )
        return data


def main() -> None:
    """The child: one pickled call on stdin, its pickled outcome on stdout."""
    # What the call prints (Python or C) goes to stderr: stdout carries only the outcome.
    answer = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    function, args = pickle.load(sys.stdin.buffer)
    with answer:
        answer.write(_outcome(function, args))


if __name__ == "__main__":
    main()
