# Included by every Makefile that compiles code including mearas/region.h
# (whose ops come from include/mearas/ops.spec) or the protobuf-c code of
# proto/*.proto: where the top-level Makefile generates them (once, for
# every build), and prerequisites that make them. Set ROOT (the repository
# root) first; add $(OPS_GEN_INC) to the include flags and `| ops-gen` (or
# `| pb-gen`, with -I$(PB_GEN_DIR)) to the rules that compile.
OPS_GEN_DIR := $(ROOT)/build/gen
OPS_GEN_INC := -I$(OPS_GEN_DIR)
PB_GEN_DIR  := $(OPS_GEN_DIR)/pb
# not the includer's default goal: that stays the first target it defines
opgen_mk_goal := $(.DEFAULT_GOAL)
.PHONY: ops-gen pb-gen
ops-gen:
	@$(MAKE) -s -C $(ROOT) gen
pb-gen:
	@$(MAKE) -s -C $(ROOT) pb
.DEFAULT_GOAL := $(opgen_mk_goal)
