"""A collaborative-coding environment for multi-turn RL with a composite reward (notebook 11).

The second source of the course (the Nova Forge post) trains a model that, given a brief and
under-specified coding request, either asks the user a clarifying question or commits code; a
user simulator holds the full specification and reveals one hidden detail per relevant question,
and a reward handler runs the committed code against hidden unit tests. This package is that
environment, runnable offline:

| module | what it is |
|---|---|
| `tasks` | the programming tasks: brief, hidden details, entry point, hidden tests, reference and "guessed detail" solutions |
| `simulator` | the user who holds the specification (rule-based offline; a Bedrock model can be plugged in live) |
| `sandbox` | runs untrusted committed code; the trusted parent judges the outputs against expected values it never sends |
| `jail` | the child's own root (interpreter and standard library read-only, private /tmp and /proc), namespaces, and mounts it cannot undo |
| `reward` | the four-component reward, in the bring-your-own-orchestrator output shape |
| `env` | one conversation: the turns, the commit, the reward |
| `policy` | the stand-in coder: a small softmax policy over four actions, trained by group-relative policy gradient |
| `trainer` | the training loop and the reward variants the lesson reproduces |
| `instrumentation` | per-component mean and within-group spread, the dead-component flag, advantage shares, transcript sorting |
| `report` | reading the stored multi-seed results of experiments/composite_rewards.py |
| `byoo` | Nova Forge's `load_environment()` and the rollout report of a model's conversation |
| `forge` | the environment bundle, the `rollout.delegate: true` recipe fragment, the infrastructure and its clean-up |
"""
