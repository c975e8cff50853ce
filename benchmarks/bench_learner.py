"""Speed of the learner (the tiny language model): generation, the GRPO step, and MFU.

    python benchmarks/bench_learner.py [--batch 64] [--prompt 100] [--new 32] [--repeats 3]
                                       [--step-repeats 3] [--threads 1 2]

Prints, measured in this run on this machine:
- the float32 matrix-multiply rate (512 x 512 x 512, one BLAS thread as the learner uses it,
  and with the library's default threads), the yardstick for the rest;
- generated tokens per second: `--batch` prompts of `--prompt` tokens read into the KV cache and
  `--new` tokens sampled for each, batched as the serving engine batches them;
- the GRPO update's time on a batch of games shaped like the default run's (256 games of about
  130 tokens, 6 turns each; forward, backward and the Adam step on the adapter);
- a whole GRPO step as the batched trainer takes it (experiments/learner_grpo.py `train_batch`):
  `learner.play.play_games` of 32 training words x 8 games at temperature 1, effort "low",
  at most 8,192 tokens a turn, then `learner.grpo.update` on those games with group-relative
  advantages of the game's own reward, from a fresh adapter of the default run's rank; its play,
  update and total seconds, once for each of `--threads` (Python threads, one BLAS thread each:
  `play_games(threads=)` and `update(threads=)`; two only pay on two otherwise idle cores);
- model FLOPs utilisation (MFU): the model's FLOPs per second in each (2 x multiply-adds of
  every weight matrix per token, plus attention's q.k and p.v over the context; the backward
  counted as twice the forward) divided by the one-thread matrix-multiply rate (times the
  threads, for the whole step). The whole step counts useful work only: every token of each
  game's conversation read once while playing (padding, finished rows and re-read prompts are
  not counted) and every unpadded token of the update.

The weights are the committed base if present (else random weights of the same shape: speed
does not depend on the values, but the games' lengths do). Medians over `--repeats` (the whole
step: over `--step-repeats`, after one unmeasured warm-up step). On a shared machine,
wall-clock times include the neighbours: run it on an idle one for figures to quote.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from mtrl_course.learner import grpo, sampler  # noqa: E402
from mtrl_course.learner import model as lm  # noqa: E402
from mtrl_course.learner.lora import Adapter  # noqa: E402
from mtrl_course.rl.optim import AdamW  # noqa: E402
from mtrl_course.learner.tokenizer import VOCAB_SIZE  # noqa: E402


def matmul_rate(threads: int | None, n: int = 512, reps: int = 20) -> float:
    """GFLOP/s of an n x n x n float32 product, with `threads` BLAS threads (None: the default)."""
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.random.default_rng(1).random((n, n), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        a @ b
        started = time.perf_counter()
        for _ in range(reps):
            a @ b
        return 2 * n**3 * reps / (time.perf_counter() - started) / 1e9


def forward_flops(config: lm.ModelConfig, tokens: int, context: float) -> float:
    """FLOPs of a forward pass over `tokens` tokens that each attend to `context` positions."""
    d, layers = config.d_model, config.layers
    weights = layers * (3 * d * d + d * d + 2 * d * d * config.mlp_ratio) + config.vocab * d  # + tied head
    attention = layers * 2 * d * context  # q.k and p.v
    return 2.0 * tokens * (weights + attention)


def load_or_random() -> tuple[dict, lm.ModelConfig, str]:
    try:
        from mtrl_course.local.learner_policy import load_base

        return load_base()
    except (FileNotFoundError, ValueError):
        config = lm.ModelConfig(VOCAB_SIZE)
        return lm.init_params(config, np.random.default_rng(0)), config, "random weights"


def bench_generation(params, config, batch, prompt, new, seed):
    rng = np.random.default_rng(seed)
    prompts = [list(rng.integers(10, VOCAB_SIZE, prompt)) for _ in range(batch)]
    params_s = [sampler.SamplingParams(1.0, 1.0, new, frozenset()) for _ in prompts]
    started = time.perf_counter()
    sampler.generate(params, config, prompts, params_s, [np.random.default_rng([seed, i]) for i in range(batch)])
    seconds = time.perf_counter() - started
    flops = forward_flops(config, batch * prompt, prompt / 2) + forward_flops(config, batch * new, prompt + new / 2)
    return batch * new / seconds, batch * (prompt + new) / seconds, flops / seconds / 1e9


def synthetic_games(games: int, turns: int, rng: np.random.Generator) -> list[grpo.Sample]:
    out = []
    for g in range(games):
        context = list(rng.integers(10, VOCAB_SIZE, 4))
        sampled = []
        for _ in range(turns):
            reply = list(rng.integers(10, VOCAB_SIZE, 9))
            sampled.append(grpo.Turn(tuple(context), tuple(reply), tuple([-1.0] * len(reply))))
            context = context + reply + list(rng.integers(10, VOCAB_SIZE, 11))
        out.append(grpo.Sample(1.0 if g % 2 else -1.0, sampled))
    return out


def bench_step(params, config, games, turns, seed):
    rng = np.random.default_rng(seed)
    adapter = Adapter.new(config, 32, 64, rng)
    batch = synthetic_games(games, turns, rng)
    started = time.perf_counter()
    _, stats = grpo.update(params, config, adapter, batch, AdamW(1e-3), step=1)
    seconds = time.perf_counter() - started
    length = stats.forward_tokens / max(1, len(batch))
    flops = 3 * forward_flops(config, stats.forward_tokens, length / 2)
    return seconds, stats.forward_tokens, flops / seconds / 1e9


def step_words(count: int) -> list[str]:
    """The first `count` training words (the dataset's), or a fixed sample of the dictionary."""
    try:
        import json

        from mtrl_course.local import failure_experiments

        return [json.loads(task)["answer"] for task in failure_experiments.rows("training")][:count]
    except (FileNotFoundError, ImportError):
        from wordle_agent.words import ANSWERS

        return list(ANSWERS)[:count]


def useful_flops(config: lm.ModelConfig, batch: list[grpo.Sample], passes: int) -> float:
    """FLOPs of `passes` passes (1: play, 3: forward and backward) over every game's sequences,
    each token read once (the same sequences the update trains; the last token is only sampled)."""
    flops = 0.0
    for sample in batch:
        for seq in grpo.sequences(grpo.Sample(1.0, sample.turns)):
            n = len(seq.tokens) - 1
            flops += passes * forward_flops(config, n, n / 2)
    return flops


def bench_whole_step(params, config, words, group, threads, seed):
    """(play seconds, update seconds, play FLOPs, update FLOPs) of one realistic GRPO step."""
    from mtrl_course.learner import play
    from mtrl_course.rl.advantages import group_advantages

    adapter = Adapter.new(config, 32, 64, np.random.default_rng([seed, 19]))
    started = time.perf_counter()
    games = play.play_games(
        params,
        config,
        [w for w in words for _ in range(group)],
        temperature=1.0,
        effort="low",
        seed=seed,
        adapter=adapter,
        max_tokens=8192,
        batch=len(words) * group,
        threads=threads,
    )
    played = time.perf_counter()
    rewards = np.array([g.reward for g in games])
    advantages = np.concatenate([group_advantages(rewards[i : i + group]) for i in range(0, len(rewards), group)])
    batch = [
        grpo.Sample(
            float(a), [grpo.Turn(tuple(t["prompt"]), tuple(t["tokens"]), tuple(t["logprobs"])) for t in g.turns]
        )
        for g, a in zip(games, advantages)
    ]
    updating = time.perf_counter()
    grpo.update(params, config, adapter, batch, AdamW(1e-3), step=1, threads=threads)
    done = time.perf_counter()
    used = [b for b in batch if b.advantage != 0]
    return played - started, done - updating, useful_flops(config, batch, 1), useful_flops(config, used, 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=100)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--games", type=int, default=256)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--step-repeats", type=int, default=3)
    ap.add_argument("--words", type=int, default=32)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    params, config, base_id = load_or_random()
    print(f"learner: {lm.count_parameters(params):,} parameters ({base_id}), {config}")
    rate_1 = statistics.median(matmul_rate(1) for _ in range(args.repeats))
    rate_all = statistics.median(matmul_rate(None) for _ in range(args.repeats))
    print(
        f"float32 matmul 512^3: {rate_1:.1f} GFLOP/s on one BLAS thread, {rate_all:.1f} GFLOP/s with the default threads"
    )
    gens = [bench_generation(params, config, args.batch, args.prompt, args.new, r) for r in range(args.repeats)]
    gen_tps, all_tps, gen_gflops = (statistics.median(x) for x in zip(*gens))
    print(
        f"generation (batch {args.batch}, {args.prompt}-token prompts, {args.new} new tokens each): "
        f"{gen_tps:,.0f} generated tokens/s ({all_tps:,.0f} tokens/s with the prefill); "
        f"{gen_gflops:.2f} GFLOP/s = MFU {gen_gflops / rate_1:.1%} of one thread"
    )
    steps = [bench_step(params, config, args.games, args.turns, r) for r in range(args.repeats)]
    seconds, tokens, step_gflops = (statistics.median(x) for x in zip(*steps))
    print(
        f"GRPO step ({args.games} games x {args.turns} turns, {tokens:,.0f} tokens through forward and backward): "
        f"{seconds:.2f} s; {step_gflops:.2f} GFLOP/s = MFU {step_gflops / rate_1:.1%} of one thread"
    )
    words = step_words(args.words)
    for threads in args.threads:
        bench_whole_step(params, config, words, args.group, threads, seed=0)  # warm-up (allocations, BLAS)
        runs = [bench_whole_step(params, config, words, args.group, threads, r) for r in range(args.step_repeats)]
        play_s, update_s, play_flops, update_flops = (statistics.median(x) for x in zip(*runs))
        total = statistics.median(p + u for p, u, _, _ in runs)
        rate = rate_1 * threads
        print(
            f"whole GRPO step ({len(words)} words x {args.group} games, T=1, effort low, {threads} thread"
            f"{'s' if threads > 1 else ''}): {total:.2f} s = play {play_s:.2f} s + update {update_s:.2f} s; "
            f"MFU play {play_flops / play_s / 1e9 / rate:.1%}, update {update_flops / update_s / 1e9 / rate:.1%}, "
            f"whole step {(play_flops + update_flops) / total / 1e9 / rate:.1%} "
            f"(of {threads} x the one-thread matmul rate)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
