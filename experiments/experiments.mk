# Experiment sweeps of the harness (experiments/harness): included from the
# top-level Makefile. `make experiment-NAME` runs one sweep; results (CSV,
# JSON, PNG) go to experiments/results/ (experiments/results/sim/ on the sim).
# EXP_ARGS passes more options, e.g. EXP_ARGS='--seconds 10 --apps cp'.
EXPERIMENTS := demo contention remote-share network batch latency assembly scaling
BUILD ?= build
EXP_ARGS ?=
EXP_PYTHON ?= python3

.PHONY: $(addprefix experiment-,$(EXPERIMENTS)) experiments-build
experiments-build:
	$(MAKE) all $(BUILD)/experiments/microbench
	$(MAKE) -C experiments/apps

# assembly: the acceptance metric (experiments/results/assembly.json), on a
# 2-GPU machine; 8 s per point keeps the whole call near two minutes
experiment-assembly: EXP_DEFAULT = --seconds 8
experiment-demo: EXP_DEFAULT = --seconds 1
$(addprefix experiment-,$(EXPERIMENTS)): experiment-%: experiments-build
	cd experiments/harness && $(EXP_PYTHON) -m mearas_exp $* $(EXP_DEFAULT) $(EXP_ARGS)
