# Two commands a newcomer needs: `make course` and `make test`. Each creates (or reuses) the
# local virtualenv in .venv from requirements.lock by itself; nothing else is required but
# python3 (3.11.5 or newer: the locked numpy, pandas, ipykernel and soupsieve need it) and make.

PYTHON ?= python3
PYTHON_MIN := 3.11.5
VENV   ?= .venv
BIN    := $(VENV)/bin
# The stamp's name is a checksum of the lock and pyproject.toml, and it has no prerequisites: make
# decides by content alone. (With the two files as prerequisites, make also compared timestamps,
# so a fresh clone or a branch switch, which leave the lock newer than the stamp, re-ran pip for
# about 45 s and re-pointed the editable install at whichever clone ran it.)
STAMP  := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
# Every command runs this checkout's code, even with a virtualenv shared by several clones
# (VENV=../other-clone/.venv): the editable install's path entry points at the clone that made
# the venv, and PYTHONPATH comes before it on sys.path. The toolkit then finds its files from the
# current folder (mtrl_course.config.REPO_ROOT), so each clone reads and writes only its own.
export PYTHONPATH := $(CURDIR)/agent_src$(if $(PYTHONPATH),:$(PYTHONPATH))
export MTRL_MODE ?= offline
# Keep third-party telemetry and update checks quiet and offline.
export SAGEMAKER_TELEMETRY_DISABLED ?= true
export MPLBACKEND ?= Agg
# Python keeps the course's own compiled modules (__pycache__/, git-ignored) even where the
# environment turns that off (PYTHONDONTWRITEBYTECODE=1, as on this project's CI image): every
# test worker, notebook kernel and child process would otherwise compile them again from source.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help venv check-python course figures test test-experiments test-fast lint ruff types notebooks bench base lock words dataset site student lab clean distclean

help:
	@echo "make course     run the course's main job offline (creates .venv on first use; changes no committed file)"
	@echo "make test       lint, then the first test tier (unit, property, contract, nbval, hygiene) with the type check beside it"
	@echo "make test-experiments  the second tier: one-seed re-runs of the stored experiments, perturbed arithmetic, slow end-to-end checks"
	@echo "make lint       ruff (lint and format check) and mypy only"
	@echo "make lab        open the notebooks in JupyterLab (this environment's python3 kernel, clean saves)"
	@echo "make site       render the course as a static website in build/site/ (offline)"
	@echo "make student    write output-free copies of the notebooks to student/ (generated, git-ignored; keeps a copy you changed, FORCE=1 replaces it)"
	@echo "make notebooks  re-execute every notebook offline and store its outputs (rewrites notebooks/ and figures/)"
	@echo "make figures    re-execute every notebook offline and refresh figures/ only (on purpose; the notebooks stay as they are)"
	@echo "make bench      print the benchmark medians and ratios"
	@echo "make base       rebuild the learner's base model from the repository, all six stages, into build/base/ (about 90 min; leaves the committed base as it is)"
	@echo "make lock       regenerate requirements.lock from pyproject.toml (on purpose only)"
	@echo "make clean      remove local state (.state, build); distclean also removes .venv"

# One clear message instead of a resolver error when the interpreter is too old (checked only
# before a virtualenv is created; an existing .venv already passed).
PYTHON_CHECK = version=$$($(PYTHON) -c 'import sys; print("%d.%d.%d" % tuple(sys.version_info[:3]))' 2>/dev/null) || { \
		echo "No Python found as '$(PYTHON)': the course needs Python $(PYTHON_MIN) or newer; install it and run make again (or pass PYTHON=/path/to/python3.11)."; exit 1; }; \
	$(PYTHON) -c 'import sys; sys.exit(tuple(sys.version_info[:3]) < (3, 11, 5))' || { \
		echo "$(PYTHON) is Python $$version, but the course needs Python $(PYTHON_MIN) or newer (the pinned numpy, pandas and ipykernel require it): install Python $(PYTHON_MIN) or newer and run make again with PYTHON=/path/to/that/python3."; exit 1; }

check-python:
	@$(PYTHON_CHECK)

# The notebooks' git filter (metadata only; see .gitattributes) is registered in this clone's
# git config; git runs it from the top of the work tree, so the relative path holds. Without the
# virtualenv (after distclean) it passes files through unchanged instead of failing every git add.
NBFILTER := if [ -x $(BIN)/python ]; then exec $(BIN)/python -m mtrl_course.curriculum.nbfilter; else exec cat; fi
register-filter = git rev-parse --is-inside-work-tree >/dev/null 2>&1 && git config filter.mtrl-notebook.clean '$(NBFILTER)' || true

# pip runs with --quiet (its per-package lines would bury everything else), so each step says
# what it is doing before it starts: the locked install is silent for minutes on a first run.
$(STAMP):
	@test -x $(BIN)/python || { $(PYTHON_CHECK); }
	@test -x $(BIN)/python || echo "[venv 1/4] creating the virtualenv $(VENV) with $(PYTHON) (first run only)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { \
		echo "$(PYTHON) could not create a virtualenv; on Debian or Ubuntu: sudo apt-get install python3-venv"; \
		rm -rf $(VENV); exit 1; }
	@echo "[venv 2/4] updating pip in $(VENV)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "[venv 3/4] installing the $$(grep -c '==' requirements.lock) locked packages from requirements.lock (pip is quiet; a first run downloads them and takes minutes, a re-run only checks them)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@echo "[venv 4/4] installing the course's own package (editable)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@rm -f $(VENV)/.installed-*
	@$(register-filter)
	@touch $@
	@echo "[venv] ready: $(VENV) (rebuilt only when requirements.lock or pyproject.toml change)"

venv: $(STAMP)
	@$(register-filter)

# The course's main job: verify the data, play the reference games, train and evaluate the
# stand-in offline, then execute the course notebooks in fresh kernels. It leaves the checkout as
# it found it: the figures go to build/figures/ (git-ignored) and the committed notebooks stay as
# they are. `make figures` refreshes figures/ on purpose, `make notebooks` the notebooks too.
course: $(STAMP)
	$(BIN)/mtrl course
	$(BIN)/mtrl notebooks run 00 01 02 03 04 05 06 07 08 09 10 11 --no-store

figures: $(STAMP)
	$(BIN)/mtrl notebooks run 00 01 02 03 04 05 06 07 08 09 10 11 --no-store --store-figures

# One pytest-xdist worker more than the machine has CPUs (at most 4): modules stay whole on one
# worker, the notebooks 00 to 08 run in order on one worker, and 09, 10, 11 and the template, which
# need nothing from them, each in a state folder of their own beside them (see
# tests/notebooks_conftest_plugin.py). Many tests wait on a kernel, a server, a subprocess or a
# sandbox's time limit: on a 2-core machine, one worker per CPU kept 1.76 CPUs busy on average and
# pytest took 4:27; one worker more kept 1.89 busy and took 3:58.
# (The CPUs this process may use, as pytest-xdist's `-n auto` counts them, asked of the venv's
# python when a test recipe runs: the venv exists by then. Asked of PYTHON while make parsed this
# file, a PYTHON= that does not exist added make's "No such file or directory" line to every
# command's output, check-python's message included.)
PYTEST_WORKERS ?= $(shell $(BIN)/python -c 'import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1)' 2>/dev/null || echo 2)
PYTEST = $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --maxprocesses 4 --dist loadgroup
# Two tiers split the suite by one marker (pyproject.toml): every test runs in exactly one of them
# (tests/test_makefile.py checks that the two selections are complements). `make test` is the
# everyday one; `make test-experiments` holds the one-seed re-runs of the stored experiments, the
# perturbed-arithmetic run of every notebook and the slowest end-to-end checks that are not
# notebooks (minutes each; tests/test_makefile.py lists them). `.ci/run` runs both.
TIER_TEST := not experiments
TIER_EXPERIMENTS := experiments
# mypy (CPU-bound, about 12 s on a fresh clone) runs beside the tests instead of before them; its
# report follows theirs, and either failing fails `make test`.
TYPES_LOG := build/mypy.log
test: $(STAMP) ruff
	@mkdir -p $(dir $(TYPES_LOG))
	@echo "$(BIN)/mypy > $(TYPES_LOG) (beside the tests; its report follows theirs)"
	@$(BIN)/mypy > $(TYPES_LOG) 2>&1 & types=$$!; \
	echo '$(PYTEST) -m "$(TIER_TEST)"'; \
	$(PYTEST) -m "$(TIER_TEST)"; tests=$$?; \
	wait $$types; typed=$$?; \
	echo "mypy:"; cat $(TYPES_LOG); \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

test-experiments: $(STAMP)
	$(PYTEST) -m "$(TIER_EXPERIMENTS)"

# Style and types, configured in pyproject.toml: ruff's lint rules, ruff's formatter (check only;
# `$(BIN)/ruff format` rewrites) and mypy over both packages.
lint: ruff types

ruff: $(STAMP)
	$(BIN)/ruff check agent_src tests benchmarks experiments
	$(BIN)/ruff format --check agent_src tests benchmarks experiments

types: $(STAMP)
	$(BIN)/mypy

# The first tier without the notebooks (quick inner loop while editing code).
test-fast: $(STAMP)
	$(PYTEST) -m "not notebooks and ($(TIER_TEST))"

notebooks: $(STAMP)
	$(BIN)/mtrl notebooks run

# JupyterLab on the course: the notebooks ask for `python3`, so this environment gets its own
# python3 kernelspec (installed only when the one there differs), preferred over one in your home
# folder (mtrl_course/curriculum/jupyter.py).
lab: $(STAMP)
	@$(register-filter)
	$(BIN)/python -m mtrl_course.curriculum.jupyter

# The course as a static website (mkdocs-material + mkdocs-jupyter), readable offline.
site: $(STAMP)
	$(BIN)/python -m mtrl_course.curriculum.site

# Output-free copies for labs where learners run every cell; generated, never committed. A copy
# the learner changed is kept (student/.make-student.json records what was written); FORCE=1
# replaces every copy.
student: $(STAMP)
	$(BIN)/python -m mtrl_course.curriculum.student$(if $(FORCE), --force)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_game.py
	$(BIN)/python benchmarks/bench_policy.py
	$(BIN)/python experiments/bench_sandbox.py
	$(BIN)/python benchmarks/bench_backend.py
	$(BIN)/python benchmarks/bench_learner.py

# The learner's committed base model, rebuilt from the repository alone: the six stages of
# experiments/train_base_lm.py's STAGES in order, each continuing the one before, every stage's
# weights and provenance kept in build/base/stageN/, the result in build/base/ beside its
# comparison with the committed base (comparison.json). It never replaces the committed base:
# `python experiments/train_base_lm.py --rebuild --install` does, on purpose. About 90 minutes.
base: $(STAMP)
	$(BIN)/python experiments/train_base_lm.py --rebuild

words: $(STAMP)
	$(BIN)/mtrl words build

dataset: $(STAMP)
	$(BIN)/mtrl dataset make

# The lock is generated, never edited by hand: resolve pyproject.toml's ranges in a scratch
# virtualenv and freeze the result with exact versions.
lock:
	rm -rf build/lockenv
	$(PYTHON) -m venv build/lockenv
	build/lockenv/bin/python -m pip install --quiet --upgrade pip
	build/lockenv/bin/python -m pip install --quiet ".[test]"
	build/lockenv/bin/python -m pip freeze --exclude-editable | grep -v '^mtrl-wordle-course' > requirements.lock
	rm -rf build/lockenv

clean:
	rm -rf .state build student agent_src/app .pytest_cache .hypothesis

distclean: clean
	rm -rf $(VENV)
