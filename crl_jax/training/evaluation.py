"""Evaluation on held-out games: every eval game played once, with experience
(each episode guided by the bank) and without, on environments built at the
first evaluation and reused until `close`."""
from __future__ import annotations


from crl_jax.rl.episode_stats import batch_metrics
from crl_jax.training.components import Run
from crl_jax.training.lesson_controls import lesson_accuracy
from crl_jax.training.tasks import household_split
from crl_jax.training.step import retriever
from crl_jax.training.logs import progress_bar

EVAL_SEED = 12345  # every evaluation samples with the same seed: curves compare models, not luck


class Evaluator:
    def __init__(self, run: Run):
        self.run = run
        self._envs: dict[str, list] = {}

    def _envs_for(self, split: str, src, n: int) -> list:
        key = f"{split}/{src.env_name}"  # unseen households' games are other games
        if key not in self._envs:
            self._envs[key] = [src.make() for _ in range(n)]
        return self._envs[key]

    def modes(self) -> list[tuple[str, bool]]:
        if self.run.use_experience:
            return [("with_exp", True), ("no_exp", False)]
        return [("no_exp", False)]

    def __call__(self, label: str = "") -> dict:
        """eval_<mode>/... metrics (and eval_<mode>/<env>/... for mixtures);
        with unseen households, eval_unseen_<mode>/... for their games."""
        run, out = self.run, {}
        splits = [("", "eval", run.eval_sources)]
        if run.unseen_sources:
            splits.append(("unseen_", "unseen", run.unseen_sources))
        games = sum(len(src.tasks[: run.cfg.env.num_eval_tasks])
                    for _, _, sources in splits for src in sources)
        bar = progress_bar(len(self.modes()) * games, f"evaluation{label}", "episode")
        for prefix, split, sources in splits:
            for name, guided in self.modes():
                episodes = []
                for src in sources:
                    got = self.play(split, src, src.tasks[: run.cfg.env.num_eval_tasks],
                                    guided, bar.update)
                    if len(sources) > 1:  # mixtures: each environment's own numbers too
                        out.update(batch_metrics(got, prefix=f"eval_{prefix}{name}/{src.env_name}/"))
                    episodes += got
                out.update(batch_metrics(episodes, prefix=f"eval_{prefix}{name}/"))
        bar.close()
        if run.entry_tracker is not None and run.agent is not None:
            out.update(run.entry_tracker.extractor_metrics(run.agent))
        if run.manager is not None and run.cfg.env.households:  # the bank's lessons, against the truth
            out.update(lesson_accuracy(run.manager.bank.snapshot.entries.values(),
                                       household_split(run.cfg)))
        return out

    def play(self, split: str, src, tasks, guided: bool, progress=None) -> list:
        """Episodes of ``tasks`` of ``src`` (held-out ``split``: eval or
        unseen), all guided or all free, with the evaluation's seed."""
        run, flags = self.run, [guided] * len(tasks)
        read = (retriever(run, src.env_name, tasks, flags, record=False, split=split)
                if guided else None)
        return run.engine.play(self._envs_for(split, src, len(tasks)), tasks, flags, read,
                               seed=EVAL_SEED, progress=progress,
                               judge=run.cfg.judge if guided else None)

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()
