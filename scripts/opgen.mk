# Included by every Makefile that compiles code including mearas/proto.h
# (whose ops come from include/mearas/ops.spec): where the generated headers
# are, and a prerequisite that makes them. Set ROOT (the repository root)
# first; add $(OPS_GEN_INC) to the include flags and `| ops-gen` to the
# rules that compile.
OPS_GEN_DIR := $(ROOT)/build/gen
OPS_GEN_INC := -I$(OPS_GEN_DIR)
# not the includer's default goal: that stays the first target it defines
opgen_mk_goal := $(.DEFAULT_GOAL)
.PHONY: ops-gen
ops-gen:
	@$(MAKE) -s -C $(ROOT) gen
.DEFAULT_GOAL := $(opgen_mk_goal)
