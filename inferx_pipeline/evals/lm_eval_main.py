"""Run one ``lm-eval run --config`` document, indexing only the task folders it needs.

lm-eval's own ``run`` builds a task index of every built-in task (some 5 s of a 2-core
host's time at every start, more than a GSM8K eval against a fast server takes) before it
runs the one task named. This does what ``lm-eval run --config CONFIG`` does, through the
harness's Python API (``TaskManager``, ``simple_evaluate``, ``EvaluationTracker``): the
same config document, results and samples files and printed table; but its index holds
only the config's ``include_path`` and the built-in folders named by ``--builtin`` (e.g.
``gsm8k`` for ``lm_eval/tasks/gsm8k``). Given neither, every built-in task is indexed, as
``lm-eval run`` does.

Standalone on purpose: the interpreter running it (``scripts/lm-eval-env``) has lm-eval,
not this project. Usage: ``python lm_eval_main.py CONFIG [--builtin FOLDER]...``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main() -> None:
    """Parse the command line, evaluate, write the harness's files and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path, help="an `lm-eval run --config` YAML document")
    parser.add_argument(
        "--builtin",
        action="append",
        default=[],
        metavar="FOLDER",
        help="a folder under lm_eval/tasks to index (repeatable)",
    )
    args = parser.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # as lm-eval's own CLI sets it

    import lm_eval  # type: ignore[import-not-found]
    from lm_eval.config.evaluate_config import (  # type: ignore[import-not-found]
        EvaluatorConfig,
    )
    from lm_eval.loggers import EvaluationTracker  # type: ignore[import-not-found]
    from lm_eval.tasks import TaskManager  # type: ignore[import-not-found]
    from lm_eval.utils import make_table  # type: ignore[import-not-found]

    cfg = EvaluatorConfig.from_config(args.config)
    builtin_root = Path(lm_eval.__file__).parent / "tasks"
    folders = [builtin_root / name for name in args.builtin]
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        parser.error(f"no built-in task folder {', '.join(missing)} in this lm-eval")
    if cfg.include_path:
        folders.append(Path(cfg.include_path))
    manager = TaskManager(
        include_path=folders or None, include_defaults=not folders, metadata=cfg.metadata
    )
    tracker = EvaluationTracker(output_path=cfg.output_path)
    seeds = cfg.seed or [None] * 4
    results = lm_eval.simple_evaluate(
        model=cfg.model,
        model_args=cfg.model_args,
        tasks=cfg.tasks,
        num_fewshot=cfg.num_fewshot,
        batch_size=cfg.batch_size,
        limit=cfg.limit,
        log_samples=cfg.log_samples,
        evaluation_tracker=tracker,
        system_instruction=cfg.system_instruction,
        apply_chat_template=cfg.apply_chat_template,
        fewshot_as_multiturn=cfg.fewshot_as_multiturn,
        gen_kwargs=cfg.gen_kwargs,
        task_manager=manager,
        random_seed=seeds[0],
        numpy_random_seed=seeds[1],
        torch_random_seed=seeds[2],
        fewshot_random_seed=seeds[3],
        metadata=cfg.metadata,
    )
    samples = results.pop("samples", None)
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"] if samples is not None else ():
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    print(make_table(results))


if __name__ == "__main__":
    main()
