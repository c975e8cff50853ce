"""Train the learner's base model from the project's own games, and write its provenance.

The base is what GRPO starts from: a tiny character-level transformer (`mtrl_course.learner`)
trained by next-token prediction on rendered Wordle conversations (`learner.corpus`): games of
the reference solver, a plausible player, a greens-only player and a random player, at low
effort (a call at once) and medium effort (a short scratchpad of what the clues prove, then the
call). The mix decides how good the base is; the aim is a base that is weak but not hopeless at
the serving setting (temperature 1, low effort: about 5 to 40% of the held-out words solved),
so that reinforcement learning has room to show. How the mix was chosen is recorded in the
provenance file (`--mix-note`); it is never tuned toward the AWS walkthrough's figures.

The secret words of the corpus are the answer list minus the 128 validation words, so the
held-out solve rates are measured on words the base never saw solved.

    python experiments/train_base_lm.py                  # writes learner/base/base.safetensors and base.json
    python experiments/train_base_lm.py --games 500 --epochs 0.2 --out /tmp/pilot   # a quick pilot

Held-out solve rates are played with `learner.play` (all games of a batch sampled together,
following the agent's rules); the real agent plays the same model through the fast lane.
"""

from __future__ import annotations

import os

# One BLAS thread: on a shared 2-core machine a second BLAS thread made every small matrix
# product wait on a busy core (measured 12x slower training under load). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agent_src"))

from mtrl_course.learner import corpus, play, pretrain, weights  # noqa: E402
from mtrl_course.learner import model as lm  # noqa: E402
from mtrl_course.learner import tokenizer as tok  # noqa: E402
from mtrl_course.solver import load_split_words  # noqa: E402
from wordle_agent.words import ANSWERS  # noqa: E402

DEFAULT_OUT = REPO / "agent_src" / "mtrl_course" / "learner" / "base"
DEFAULT_MIX = {"solver": 0.25, "plausible": 0.35, "greens": 0.25, "random": 0.15}
DEFAULT_EFFORTS = {"low": 0.5, "medium": 0.5}
EVAL_SETTINGS = (
    ("t1_low", 1.0, "low"),
    ("t0_low", 0.0, "low"),
    ("t1_medium", 1.0, "medium"),
    ("t0_medium", 0.0, "medium"),
)


def parse_mix(text: str) -> dict[str, float]:
    out = {}
    for item in text.split(","):
        name, _, share = item.partition("=")
        out[name.strip()] = float(share)
    return out


def git_commit() -> str:
    """HEAD, with "+uncommitted changes" when the code it ran differs from it (git status)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "agent_src", "experiments"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" +uncommitted changes" if dirty else "")


def evaluate(params, config, words, seed):
    rates = {}
    for name, temperature, effort in EVAL_SETTINGS:
        games = play.play_games(params, config, words, temperature=temperature, effort=effort, seed=seed)
        rate, se = play.solve_rate(games)
        tokens = float(np.mean([sum(len(t["tokens"]) for t in g.turns) for g in games]))
        calls = float(np.mean([len(g.game.guesses) for g in games]))
        rates[name] = {
            "solve_rate": rate,
            "standard_error": se,
            "sampled_tokens_per_game": tokens,
            "guesses_per_game": calls,
            "mean_reward": float(np.mean([g.reward for g in games])),
        }
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=12000)
    ap.add_argument("--mix", type=parse_mix, default=DEFAULT_MIX, help="player=share,... (shares are normalised)")
    ap.add_argument("--efforts", type=parse_mix, default=DEFAULT_EFFORTS)
    ap.add_argument(
        "--slip-rate",
        type=float,
        default=0.0,
        help="share of turns whose word is misspelt (outside the dictionary) and masked from training",
    )
    ap.add_argument("--mix-note", default="", help="how this mix was chosen (recorded in the provenance)")
    ap.add_argument("--epochs", type=float, default=1.5)
    ap.add_argument("--batch-tokens", type=int, default=2400)
    ap.add_argument("--learning-rate", type=float, default=3e-3)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--context", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=None, help="stop training after this many seconds")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--base-id", default="learner-wordle-char-v1")
    ap.add_argument("--init", type=Path, default=None, help="continue from these weights (a base this script wrote)")
    ap.add_argument("--warmup", type=int, default=50)
    args = ap.parse_args(argv)

    started = time.time()
    held_out = {w.upper() for w in load_split_words("validation")}
    pool = [w for w in ANSWERS if w not in held_out]
    print(f"corpus: {args.games} games over {len(pool)} answers (the {len(held_out)} validation words held out)")
    examples = corpus.build(pool, args.mix, args.efforts, args.games, args.seed, slip_rate=args.slip_rate)
    by_player = {p: [e for e in examples if e.player == p] for p in args.mix}
    data = {
        "games": len(examples),
        "tokens": int(sum(len(e.tokens) for e in examples)),
        "trained_tokens": int(sum(sum(e.mask) for e in examples)),
        "by_player": {
            p: {"games": len(v), "solve_rate": float(np.mean([e.solved for e in v])) if v else None}
            for p, v in by_player.items()
        },
        "by_effort": {e: sum(1 for x in examples if x.effort == e) for e in args.efforts},
        "corpus_seconds": time.time() - started,
    }
    print(json.dumps(data, indent=1))

    config = lm.ModelConfig(tok.VOCAB_SIZE, args.context, args.d_model, args.layers, args.heads)
    params = lm.init_params(config, np.random.default_rng(args.seed))
    previous = None
    if args.init is not None:
        params, loaded, _ = weights.load_model(args.init)
        if loaded != config:
            raise SystemExit(f"--init {args.init} has config {loaded}, not {config}")
        json_file = args.init.with_suffix(".json")
        previous = json.loads(json_file.read_text()) if json_file.is_file() else {"weights": str(args.init)}
    print(f"model: {lm.count_parameters(params):,} parameters, {config}")
    bar = tqdm(total=1, unit="step", dynamic_ncols=True, mininterval=1 if sys.stderr.isatty() else 30)

    def on_step(step: int, total: int, loss: float, seconds: float) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")

    train_started = time.time()
    params, log = pretrain.train(
        params,
        config,
        examples,
        epochs=args.epochs,
        batch_tokens=args.batch_tokens,
        learning_rate=args.learning_rate,
        seed=args.seed,
        time_limit_s=args.time_limit,
        on_step=on_step,
        warmup=args.warmup,
    )
    bar.close()
    train_seconds = time.time() - train_started
    print(f"trained {len(log)} steps in {train_seconds:.0f} s; last loss {np.mean([r['loss'] for r in log[-20:]]):.3f}")

    eval_started = time.time()
    words = sorted(held_out)
    rates = evaluate(params, config, words, args.seed + 1000)
    for name, r in rates.items():
        print(
            f"held-out {name}: solve rate {r['solve_rate']:.3f} ± {r['standard_error']:.3f}, {r['sampled_tokens_per_game']:.0f} sampled tokens/game"
        )

    args.out.mkdir(parents=True, exist_ok=True)
    path = weights.save_model(args.out / "base.safetensors", params, config, args.base_id)
    provenance = {
        "what": "the offline learner's base model (mtrl_course.learner), trained by experiments/train_base_lm.py",
        "command": "python "
        + " ".join(
            [
                Path(sys.argv[0]).relative_to(REPO).as_posix() if Path(sys.argv[0]).is_absolute() else sys.argv[0],
                *(argv if argv is not None else sys.argv[1:]),
            ]
        ),
        "git_commit": git_commit(),
        "base_id": args.base_id,
        "seed": args.seed,
        "config": config.to_dict(),
        "parameters": lm.count_parameters(params),
        "mix": args.mix,
        "efforts": args.efforts,
        "mix_note": args.mix_note,
        "slip_rate": args.slip_rate,
        "data": data,
        "training": {
            "epochs": args.epochs,
            "steps": len(log),
            "batch_tokens": args.batch_tokens,
            "learning_rate": args.learning_rate,
            "seconds": train_seconds,
            "final_loss": float(np.mean([r["loss"] for r in log[-20:]])),
            "loss_every_100_steps": [round(r["loss"], 4) for r in log[::100]],
        },
        "held_out": {
            "words": len(words),
            "source": "data/validation-data.jsonl",
            "player": "mtrl_course.learner.play (the agent's rules, batched)",
            "seconds": time.time() - eval_started,
            "rates": rates,
        },
        "wall_seconds": time.time() - started,
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
        },
        "continued_from": previous,
        "weights_file": path.name,
        "weights_bytes": path.stat().st_size,
    }
    (args.out / "base.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and {args.out / 'base.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
