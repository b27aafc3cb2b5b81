# The generated parts of libcuda.so.1 (the driver-API front end). Include it
# from any Makefile: paths are taken relative to where it is included from.
#   $(LIBCUDA_GEN_DIR)/procaddr.gen.c        the cuGetProcAddress table
#       (scripts/procgen.py, from the real driver's measured answers)
#   $(LIBCUDA_GEN_DIR)/cu_unsupported.gen.c  a CUDA_ERROR_NOT_SUPPORTED stub
#       for every export of cuda13.symbols that no object of
#       LIBCUDA_IMPL_OBJ defines (gen_unsupported.sh)
#   $(LIBCUDA_GEN_DIR)/exptables_unserved.gen.h  the export tables with a
#       size slot, each slot not served failing (gen_exptables.py,
#       exptables_unserved.list), included by exptables.c
#   $(LIBCUDA_GEN_DIR)/libcuda.map           the linker version script:
#       exactly the cuda13.symbols names (version libcuda.so.1; programs
#       linked against NVIDIA's unversioned driver bind them all the same),
#       LIBCUDA_MAP_EXTRA under version LIBCUDA_MAP_EXTRA_VERSION, the rest
#       local (use -Wl,--version-script=$(LIBCUDA_GEN_DIR)/libcuda.map)
# Set before including:
#   LIBCUDA_IMPL_OBJ   the objects of libcuda.so.1 other than the stubs (they
#                      are prerequisites, so they must be set first)
#   LIBCUDA_GEN_DIR    where to write (default $(BUILD)/gen)
# Set any time:
#   LIBCUDA_MAP_EXTRA  more exported names or globs (version-script syntax,
#                      without the ';'), e.g. mearas_cu_*
# procaddr.gen.c and cu_unsupported.gen.c include no CUDA header; they
# want -I guest/libcuda (proctable.h, version.h) and compile under WARN.

# the repository root as a prefix ("" or "../../"), from this file's path
LIBCUDA_TOP       := $(patsubst %guest/libcuda/,%,$(dir $(lastword $(MAKEFILE_LIST))))
LIBCUDA_GEN_DIR   ?= $(BUILD)/gen
LIBCUDA_SYMBOLS   := $(LIBCUDA_TOP)guest/libcuda/cuda13.symbols
LIBCUDA_PROCTABLE ?= $(LIBCUDA_TOP)experiments/drvapi-probe/results/h100-580.159.04-proctable.tsv.gz
LIBCUDA_IMPL_OBJ  ?=
LIBCUDA_MAP_EXTRA ?=
LIBCUDA_MAP_EXTRA_VERSION ?= MEARAS_CORE_1
LIBCUDA_GEN       := $(addprefix $(LIBCUDA_GEN_DIR)/,procaddr.gen.c cu_unsupported.gen.c libcuda.map \
                     exptables_unserved.gen.h)
# not the includer's default goal: that stays the first target it defines
libcuda_gen_mk_goal := $(.DEFAULT_GOAL)

$(LIBCUDA_GEN_DIR)/procaddr.gen.c: $(LIBCUDA_TOP)scripts/procgen.py $(LIBCUDA_PROCTABLE) $(LIBCUDA_SYMBOLS)
	@mkdir -p $(dir $@)
	python3 $(LIBCUDA_TOP)scripts/procgen.py $(LIBCUDA_PROCTABLE) $(LIBCUDA_SYMBOLS) $@

$(LIBCUDA_GEN_DIR)/cu_unsupported.gen.c: $(LIBCUDA_TOP)scripts/gen_unsupported.sh $(LIBCUDA_SYMBOLS) \
		$(LIBCUDA_IMPL_OBJ)
	@mkdir -p $(dir $@)
	sh $(LIBCUDA_TOP)scripts/gen_unsupported.sh cu_unsupported_call $(LIBCUDA_SYMBOLS) $(LIBCUDA_IMPL_OBJ) > $@.tmp
	mv $@.tmp $@

$(LIBCUDA_GEN_DIR)/exptables_unserved.gen.h: $(LIBCUDA_TOP)guest/libcuda/gen_exptables.py \
		$(LIBCUDA_TOP)guest/libcuda/exptables_unserved.list
	@mkdir -p $(dir $@)
	python3 $^ $@

# rewritten on every make, replaced only when its text changes, so that a
# change of LIBCUDA_MAP_EXTRA relinks and nothing else does
.PHONY: libcuda-map-always
$(LIBCUDA_GEN_DIR)/libcuda.map: $(LIBCUDA_SYMBOLS) libcuda-map-always
	@mkdir -p $(dir $@)
	@{ echo '/* generated from $(notdir $(LIBCUDA_SYMBOLS)) by gen.mk: do not edit */'; \
	   echo 'libcuda.so.1 { global:'; sed 's/#.*//;s/[[:space:]]//g;/^$$/d;s/.*/  &;/' $(LIBCUDA_SYMBOLS); \
	   echo '};'; echo '$(LIBCUDA_MAP_EXTRA_VERSION) { global:'; \
	   $(foreach x,$(LIBCUDA_MAP_EXTRA),echo '  $(x);';) \
	   echo 'local: *; };'; } > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "wrote $@"; fi
.DEFAULT_GOAL := $(libcuda_gen_mk_goal)
