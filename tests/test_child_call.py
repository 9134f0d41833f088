"""``call_in_child``: the call runs in another process, its result or its exception comes
back as raised there, a child that dies is an error naming its status, and the caller's
``__main__`` never runs again."""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from inferx_pipeline.child_call import call_in_child


def test_the_call_runs_in_another_process_and_returns_its_result() -> None:
    assert call_in_child(os.getpid) != os.getpid()
    assert call_in_child(operator.add, [1, 2], [3]) == [1, 2, 3]


def test_its_exception_is_raised_here_with_the_childs_traceback() -> None:
    with pytest.raises(ZeroDivisionError) as raised:
        call_in_child(operator.truediv, 1, 0)
    notes = "".join(raised.value.__notes__)
    assert "in the child process" in notes and "ZeroDivisionError" in notes


def test_a_child_that_dies_is_an_error_naming_its_status() -> None:
    with pytest.raises(ChildProcessError, match=r"abort: its child process exited with status -6"):
        call_in_child(os.abort)


def test_what_the_call_prints_does_not_corrupt_its_answer(
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert call_in_child(print, "printed by the child") is None
    out, err = capfd.readouterr()
    assert "printed by the child" in err and "printed by the child" not in out


def test_the_callers_main_module_is_not_run_again(tmp_path: Path) -> None:
    # A script without a ``__main__`` guard: multiprocessing's spawn and forkserver would
    # import it again in the child and run the call (and this line) once more.
    ran = tmp_path / "ran"
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import os, sys\n"
        "from inferx_pipeline.child_call import call_in_child\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    f.write('ran\\n')\n"
        "print(call_in_child(os.getpid) != os.getpid())\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), str(ran)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "True"
    assert ran.read_text() == "ran\n"


def test_a_result_that_does_not_pickle_is_pickles_error_here() -> None:
    with pytest.raises(TypeError, match="cannot pickle") as raised:
        call_in_child(threading.Lock)
    assert "in the child process" in "".join(raised.value.__notes__)
