"""One GRPO update taken apart, on the course's tiny language model (notebook 05's last section).

A training job turns one reward per game into a change of the LoRA adapter. This module does
one such step in the open, on the learner (`mtrl_course.learner`, a real decoder-only language
model in numpy with its committed base weights) and keeps every intermediate for the notebook to
show:

1. one group: `group_size` games of the same secret word, played at temperature 1 by the base
   model through the batched player (`learner.play`, the agent's rules), each scored by the
   course's reward (`WordleGame.final_reward`, i.e. `wordle_agent.reward.outcome_reward`);
2. the group-relative advantages (`rl.advantages.group_advantages`, the same function the offline
   service's runner uses), one per game;
3. which tokens carry the loss: only those the model sampled (`learner.grpo.sequences`); the
   system marker, the task, the template's turn openers and the tool results are context;
4. the per-token terms of the objective and the gradient, then one Adam step on a fresh adapter
   with the course's offline hyperparameters (`learner.grpo.update`);
5. a second pass over the same samples with the updated adapter: the ratios and which tokens the
   clip bounds silence;
6. the LoRA update of one projection, and what the step did to the winning game's first guess.

The word is not picked by hand: `choose_group` scans the training words in file order with one
seed and takes the first group that holds both a solved and an unsolved game.

Offline-only teaching, in either mode: it calls no AWS service. The live service does the same
arithmetic on gpt-oss-20b. This module shows what one update is, not whether a run improves: the
learner's stored multi-step runs (experiments/learner_grpo.py) collapse with the course's tiered
reward and, with the outcome-only reward, gain about 6 held-out points in 160 steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtrl_course import config, dataset
from mtrl_course.learner import grpo, play, weights
from mtrl_course.learner import model as lm
from mtrl_course.learner import tokenizer as tok
from mtrl_course.learner.lora import Adapter
from mtrl_course.learner.threads import one_blas_thread
from mtrl_course.numerics import exp, log, matmul, norm
from mtrl_course.resources import DEFAULT_REASONING_EFFORT
from mtrl_course.rl.advantages import group_advantages
from mtrl_course.service_spec import OFFLINE_OVERRIDES, WALKTHROUGH_OVERRIDES, TrainingHyperparameters

# The committed base model, the one the offline Job Runtime serves (`local.learner_policy.BASE_FILE`).
BASE_FILE = Path(weights.__file__).with_name("base") / "base.safetensors"
SEED = 0
# How many training words `choose_group` tries before giving up (each group costs well under a
# second; at temperature 1 the base solves about one game in six, so a mixed group comes early).
MAX_WORDS = 40
# The projection whose LoRA matrices are shown: layer 0's fused query-key-value weight.
PROJECTION = "h0.qkv"
# Singular values below this share of the largest count as zero (float64 rounding is ~1e-16).
RANK_TOL = 1e-9

# Who wrote each token of a training sequence (`token_roles`).
SYSTEM, TASK, OPENER, REPLY, TOOL, REPLAYED = (
    "system prompt",
    "task",
    "turn opener",
    "model's reply",
    "tool result",
    "earlier reply, re-rendered",
)
MASKED_ROLES = (SYSTEM, TASK, OPENER, TOOL, REPLAYED)


def _round(value: float, digits: int = 3) -> float:
    """`value` rounded, without the -0.0 a rounding residue would leave."""
    return round(float(value), digits) + 0.0


def _shown(value: float, digits: int = 3) -> str:
    return f"{_round(value, digits):.{digits}f}"


def course_hyperparameters() -> TrainingHyperparameters:
    """The offline course job's hyperparameters (the walkthrough's overrides, then the offline ones)."""
    return TrainingHyperparameters.resolve({**WALKTHROUGH_OVERRIDES, **OFFLINE_OVERRIDES})


def token_roles(sequence: grpo.Sequence_) -> list[str]:
    """Who wrote each token of `sequence`: the sampled positions are the model's reply, the rest
    is context the model only read (named by the special token that opened its segment)."""
    trained = set(int(p) for p in sequence.positions)
    roles: list[str] = []
    segment = SYSTEM
    for index, token in enumerate(int(t) for t in sequence.tokens):
        if index in trained:
            roles.append(REPLY)
            continue
        if token in (tok.BOS, *tok.EFFORT_TOKENS.values()):
            segment = SYSTEM
        elif token == tok.USER:
            segment = TASK
        elif token == tok.TOOL:
            segment = TOOL
        elif token == tok.ASSISTANT:
            roles.append(OPENER)
            segment = REPLAYED  # what follows an opener in context was not sampled in this sequence
            continue
        roles.append(segment)
    return roles


def sequence_logprobs(
    params: Any, model_config: lm.ModelConfig, adapter: Adapter | None, sample: grpo.Sample
) -> np.ndarray:
    """log pi(o_t | o_<t) of every sampled token of a game, in `grpo.sequences` order."""
    out = []
    for s in grpo.sequences(sample):
        logits, _ = lm.forward(params, model_config, s.tokens[None, :-1], adapter)
        logp = lm.log_softmax(logits.astype(np.float64))[0]
        out.append(logp[s.positions - 1, s.tokens[s.positions]])
    return np.concatenate(out) if out else np.zeros(0)


def samples(games: Sequence[play.PlayedGame], advantages: Sequence[float] | np.ndarray) -> list[grpo.Sample]:
    """The games as GRPO sees them: an advantage and the policy trace of each turn."""
    return [grpo.Sample(float(a), [grpo.Turn.from_trace(t) for t in g.turns]) for g, a in zip(games, advantages)]


def choose_group(
    params: Any,
    model_config: lm.ModelConfig,
    words: Sequence[str],
    *,
    seed: int = SEED,
    group_size: int = 8,
    effort: str = DEFAULT_REASONING_EFFORT,
    max_words: int = MAX_WORDS,
) -> tuple[str, list[dict[str, Any]], list[play.PlayedGame]]:
    """The first word of `words` whose group (played with `seed`) holds a solved and an unsolved
    game: (word, one row per word tried, the chosen group's games)."""
    tried: list[dict[str, Any]] = []
    for word in words[:max_words]:
        games = play.play_games(params, model_config, [word] * group_size, temperature=1.0, effort=effort, seed=seed)
        wins = sum(g.solved for g in games)
        mixed = 0 < wins < group_size
        tried.append({"word": word, "solved": wins, "of": group_size, "chosen": mixed})
        if mixed:
            return word, tried, games
    raise ValueError(f"none of the first {max_words} words gave a group with a win and a loss at seed {seed}")


@dataclass
class Anatomy:
    """Everything one GRPO step computed, for one group (see the module docstring)."""

    word: str
    seed: int
    tried: list[dict[str, Any]]
    hyperparameters: TrainingHyperparameters
    params: Any = field(repr=False)
    model_config: lm.ModelConfig = field(repr=False)
    games: list[play.PlayedGame] = field(repr=False)
    rewards: np.ndarray = field(repr=False)
    advantages: np.ndarray = field(repr=False)
    batch: list[grpo.Sample] = field(repr=False)
    before: Adapter = field(repr=False)
    after: Adapter = field(repr=False)
    first_pass: grpo.StepStats = field(repr=False)  # the objective's gradient before the step
    step: grpo.StepStats = field(repr=False)  # what `grpo.update` reported
    second_pass: grpo.StepStats = field(repr=False)  # the same samples, after the step
    tied_group: grpo.StepStats = field(repr=False)  # the same games, had every reward been equal
    tied_gradient_norm: float = field(repr=False)  # the norm of that group's gradient
    logp_before: list[np.ndarray] = field(repr=False)  # per game, recomputed before the step
    logp_after: list[np.ndarray] = field(repr=False)  # per game, after the step

    # --- 1. rewards and advantages ------------------------------------------------------------
    def rewards_table(self) -> list[dict[str, Any]]:
        rows = []
        for i, (g, r, a) in enumerate(zip(self.games, self.rewards, self.advantages)):
            guesses = len(g.game.guesses)
            outcome = f"solved on guess {guesses}" if g.solved else ("no valid guess" if not guesses else "not solved")
            rows.append({"game": i, "outcome": outcome, "reward": float(r), "advantage": float(a)})
        return rows

    def group_line(self) -> str:
        r = self.rewards
        return (
            f"mean reward {r.mean():.3f}, std {r.std():.3f}; advantages sum to {_shown(self.advantages.sum())}, "
            f"their std is {self.advantages.std():.3f}"
        )

    # --- 2. which tokens carry the loss -------------------------------------------------------
    def sequences(self, game: int) -> list[grpo.Sequence_]:
        return grpo.sequences(self.batch[game])

    def segments(self, game: int) -> list[dict[str, Any]]:
        """One row per run of tokens with the same author, for every sequence of `game`."""
        rows: list[dict[str, Any]] = []
        for s in self.sequences(game):
            roles = token_roles(s)
            start = 0
            for end in range(1, len(roles) + 1):
                if end == len(roles) or roles[end] != roles[start] or roles[start] == OPENER:
                    rows.append(
                        {
                            "tokens": tok.show(s.tokens[start:end].tolist()),
                            "written by": "the model (sampled)" if roles[start] == REPLY else roles[start],
                            "count": end - start,
                            "in the loss": "yes" if roles[start] == REPLY else "no (masked)",
                        }
                    )
                    start = end
        return rows

    def token_counts(self) -> dict[str, int]:
        """Tokens of the group's training sequences by author (the sampled ones are trained)."""
        counts: Counter[str] = Counter()
        for game in range(len(self.games)):
            for s in self.sequences(game):
                counts.update(token_roles(s))
        return {role: counts.get(role, 0) for role in (REPLY, *MASKED_ROLES) if counts.get(role, 0) or role == REPLY}

    # --- 3. the per-token loss ----------------------------------------------------------------
    def sampled_tokens(self, game: int) -> list[int]:
        return [int(t) for s in self.sequences(game) for t in s.tokens[s.positions]]

    def old_logprobs(self, game: int) -> np.ndarray:
        """What the sampler recorded for each sampled token (pi_old; `Turn.logprobs`)."""
        return np.concatenate([s.old_logprobs for s in self.sequences(game)])

    def token_losses(self, games: Sequence[int], per_game: int = 4) -> list[dict[str, Any]]:
        """The first `per_game` sampled tokens of each game in `games`, with their loss term at the
        first pass: -(1/|B|) (1/|o_i|) min(rho A_i, clip(rho) A_i), rho = pi_theta / pi_old."""
        low, high = self.hyperparameters.clip_low_threshold, self.hyperparameters.clip_high_threshold
        rows = []
        for game in games:
            a, n = float(self.advantages[game]), len(self.sampled_tokens(game))
            rho = exp(self.logp_before[game] - self.old_logprobs(game))
            for t, token in enumerate(self.sampled_tokens(game)[:per_game]):
                term = min(rho[t] * a, float(np.clip(rho[t], low, high)) * a)
                rows.append(
                    {
                        "game": game,
                        "token": tok.show([token]),
                        "A_i": a,
                        "|o_i|": n,
                        "rho": float(rho[t]),
                        "loss term": -term / (len(self.batch) * n),
                    }
                )
        return rows

    # --- 4. the second pass -------------------------------------------------------------------
    def ratios(self) -> list[np.ndarray]:
        """rho_t = exp(logp_new - logp_old) per game after the step (old: the sampler's)."""
        return [
            exp(np.minimum(new - self.old_logprobs(i), grpo.MAX_LOG_RATIO)) for i, new in enumerate(self.logp_after)
        ]

    def clip_table(self) -> list[dict[str, Any]]:
        """Sampled tokens after the step, by advantage sign and where the ratio landed."""
        low, high = self.hyperparameters.clip_low_threshold, self.hyperparameters.clip_high_threshold
        counts: Counter[tuple[str, str]] = Counter()
        for a, rho in zip(self.advantages, self.ratios()):
            sign = "A > 0 (pushed up)" if a > 0 else "A < 0 (pushed down)"
            for value in rho:
                where = (
                    f"below {low:g}" if value < low else (f"above {high:g}" if value > high else f"{low:g} to {high:g}")
                )
                counts[(sign, where)] += 1
        rows = []
        for sign in ("A > 0 (pushed up)", "A < 0 (pushed down)"):
            for where in (f"below {low:g}", f"{low:g} to {high:g}", f"above {high:g}"):
                clipped = (sign.startswith("A > 0") and where.startswith("above")) or (
                    sign.startswith("A < 0") and where.startswith("below")
                )
                rows.append(
                    {
                        "advantage": sign,
                        "rho": where,
                        "tokens": counts[(sign, where)],
                        "gradient": "zero (clipped)" if clipped else "rho * A_i / |o_i|",
                    }
                )
        return rows

    def clipped_examples(self, n: int = 4) -> list[dict[str, Any]]:
        """The `n` clipped tokens whose ratio moved furthest (their gradient is zero)."""
        low, high = self.hyperparameters.clip_low_threshold, self.hyperparameters.clip_high_threshold
        found = []
        for game, (a, rho) in enumerate(zip(self.advantages, self.ratios())):
            tokens = self.sampled_tokens(game)
            for t, value in enumerate(rho):
                if (a > 0 and value > high) or (a < 0 and value < low):
                    found.append((abs(float(log(value))), game, t, tokens[t], float(a), float(value)))
        # Sorted by |log rho| to 3 decimals, then by game and position: two tokens with the
        # same context in two games differ only in the last bits, which another CPU may order otherwise.
        found.sort(key=lambda row: (-round(row[0], 3), row[1], row[2]))
        return [
            {"game": g, "token #": t, "token": tok.show([token]), "A_i": a, "rho": value, "gradient": 0.0}
            for _, g, t, token, a, value in found[:n]
        ]

    def clipped_count(self) -> int:
        low, high = self.hyperparameters.clip_low_threshold, self.hyperparameters.clip_high_threshold
        return int(
            sum(
                (((a > 0) & (rho > high)) | ((a < 0) & (rho < low))).sum()
                for a, rho in zip(self.advantages, self.ratios())
            )
        )

    # --- 5. the LoRA update -------------------------------------------------------------------
    def lora(self, name: str = PROJECTION) -> dict[str, Any]:
        """The adapter's matrices for one projection, and delta_W = (alpha / r) A B after the step."""
        a, b = self.after.a[name].astype(np.float64), self.after.b[name].astype(np.float64)
        delta = self.after.scale * matmul(a, b)
        singular = np.linalg.svd(delta, compute_uv=False)
        rank = int((singular > RANK_TOL * singular[0]).sum()) if singular[0] > 0 else 0
        w = self.params[name].astype(np.float64)
        before = self.before.scale * matmul(
            self.before.a[name].astype(np.float64), self.before.b[name].astype(np.float64)
        )
        return {
            "projection": name,
            "W shape": tuple(w.shape),
            "A shape": tuple(a.shape),
            "B shape": tuple(b.shape),
            "r": self.after.rank,
            "alpha": self.after.alpha,
            "alpha / r": self.after.scale,
            "delta_W shape": tuple(delta.shape),
            "rank of delta_W": rank,
            "singular values": singular,
            "|delta_W| before the step": norm(before),
            "|delta_W|": norm(delta),
            "|W|": norm(w),
            "A moved by": float(np.abs(self.after.a[name] - self.before.a[name]).max()),
            "largest |B| entry": float(np.abs(b).max()),
        }

    def lora_summary(self, name: str = PROJECTION) -> list[str]:
        """`lora(name)` in a few printable lines (notebook 05)."""
        view = self.lora(name)
        sv, rank = view["singular values"], view["rank of delta_W"]
        base = sum(v.size for v in self.params.values())
        return [
            f"{name}: W {view['W shape']}, A {view['A shape']}, B {view['B shape']}, "
            f"r = {view['r']}, alpha / r = {view['alpha / r']:g}",
            f"delta_W = (alpha / r) A B is {view['delta_W shape']} like W, and its rank is {rank}: singular values "
            f"from {sv[0]:.4f} down to {sv[rank - 1]:.4f}, then {len(sv) - rank} that are zero up to rounding",
            f"Frobenius norms: |delta_W| = {view['|delta_W|']:.3f} (0 before the step), |W| = {view['|W|']:.2f}, "
            f"a ratio of {view['|delta_W|'] / view['|W|']:.4f}",
            f"A moved by {view['A moved by']:g} (while B = 0, the gradient of A is (alpha / r) G B^T = 0); "
            f"the largest entry of B is {view['largest |B| entry']:.4f}, one Adam step",
            f"trainable: {self.after.parameter_count():,} adapter parameters; frozen: {base:,} base parameters",
        ]

    # --- 6. the winning game's first guess ----------------------------------------------------
    def winner(self) -> int:
        """The game with the highest reward (a solved one: the group is chosen to hold one)."""
        return int(np.argmax(self.rewards))

    def first_reply(self, game: int | None = None) -> list[dict[str, Any]]:
        """Each token of `game`'s first reply: its log-probability before and after the step."""
        game = self.winner() if game is None else game
        n = len(self.batch[game].turns[0].tokens)
        tokens = self.sampled_tokens(game)[:n]
        before, after = self.logp_before[game][:n], self.logp_after[game][:n]
        # Rounded here, so that a near-certain token shows 0.000 rather than a rounding residue's sign.
        return [
            {"token": tok.show([t]), "logp before": _round(b), "logp after": _round(a), "change": _round(a - b)}
            for t, b, a in zip(tokens, before, after)
        ]

    def first_reply_logp(self, game: int | None = None) -> tuple[float, float]:
        """The log-probability of `game`'s whole first reply (the winner's by default), before and after."""
        game = self.winner() if game is None else game
        n = len(self.batch[game].turns[0].tokens)
        return float(self.logp_before[game][:n].sum()), float(self.logp_after[game][:n].sum())

    def _first_reply_change(self, game: int) -> float:
        n = len(self.batch[game].turns[0].tokens)
        return float(self.logp_after[game][:n].sum() - self.logp_before[game][:n].sum())

    def openers(self) -> list[dict[str, Any]]:
        """Which games wrote the same first reply: the credit of a shared token is summed over them."""
        by_reply: dict[tuple[int, ...], list[int]] = {}
        for i, s in enumerate(self.batch):
            by_reply.setdefault(tuple(s.turns[0].tokens), []).append(i)
        return [
            {
                "first reply": tok.show(reply),
                "games": ", ".join(map(str, games)),
                "solved": sum(self.games[i].solved for i in games),
                "advantages": ", ".join(f"{self.advantages[i]:+.2f}" for i in games),
                # The first turn's context is the same in every game, so the gradient of a shared
                # first reply is the sum of its games' per-token weights A_i / |o_i|.
                "sum of A_i / |o_i|": float(sum(self.advantages[i] / len(self.sampled_tokens(i)) for i in games)),
                "change in log p": self._first_reply_change(games[0]),
            }
            for reply, games in by_reply.items()
        ]


def training_words() -> list[str]:
    """The course's training words, in the training file's order."""
    return dataset.task_answers(dataset.read_rows(config.TRAIN_FILE))


def anatomy(
    words: Sequence[str] | None = None,
    *,
    seed: int = SEED,
    hyperparameters: TrainingHyperparameters | None = None,
    effort: str = DEFAULT_REASONING_EFFORT,
    base_file: Path = BASE_FILE,
) -> Anatomy:
    """Play one group on the base model, compute its advantages and one GRPO step, and keep it all."""
    hp = hyperparameters or course_hyperparameters()
    params, model_config, _ = weights.load_model(base_file)
    with one_blas_thread():
        word, tried, games = choose_group(
            params,
            model_config,
            list(words) if words is not None else training_words(),
            seed=seed,
            group_size=hp.group_size,
            effort=effort,
        )
        rewards = np.array([g.reward for g in games])
        advantages = group_advantages(rewards)
        batch = samples(games, advantages)
        # A fresh adapter as a job starts one: rank and alpha from the job, B = 0 (changes nothing).
        before = Adapter.new(model_config, hp.lora_rank, float(hp.lora_alpha), np.random.default_rng([seed, 19]))
        objective = {"clip_low": hp.clip_low_threshold, "clip_high": hp.clip_high_threshold}
        _, first_pass = grpo.objective_gradient(params, model_config, before, batch, **objective)
        logp_before = [sequence_logprobs(params, model_config, before, s) for s in batch]
        after, step = grpo.update(params, model_config, before, batch, grpo.optimizer(hp), 1, hyperparameters=hp)
        logp_after = [sequence_logprobs(params, model_config, after, s) for s in batch]
        _, second_pass = grpo.objective_gradient(params, model_config, after, batch, **objective)
        tied = samples(games, group_advantages(np.full(len(games), rewards[0])))
        tied_grads, tied_group = grpo.objective_gradient(params, model_config, before, tied, **objective)
        tied_norm = float(np.sqrt(sum(float((g**2).sum()) for g in tied_grads.values())))
    return Anatomy(
        word=word,
        seed=seed,
        tried=tried,
        hyperparameters=hp,
        params=params,
        model_config=model_config,
        games=games,
        rewards=rewards,
        advantages=advantages,
        batch=batch,
        before=before,
        after=after,
        first_pass=first_pass,
        step=step,
        second_pass=second_pass,
        tied_group=tied_group,
        tied_gradient_norm=tied_norm,
        logp_before=logp_before,
        logp_after=logp_after,
    )
