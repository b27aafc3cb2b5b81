# mearas: one Makefile builds everything.
#   make            build the runtime library, mearasd and the tools
#   make test       install what is missing, build, run the CPU-lane tests
#   make gpu-test   build and run the GPU lane (on a GPU machine), table last
#   make demo       the main job: a small end-to-end run, table last
CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
CC        ?= gcc
SAN       ?=
CFLAGS    ?= -O2 -g
WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASEFLAGS := -std=gnu11 -fPIC -pthread -D_GNU_SOURCE -Iinclude -I$(CUDA_HOME)/include $(WARN) $(SAN)
LDSAN     := $(SAN)

COMMON_SRC  := common/log.c common/fdpass.c common/fatbin.c common/fatbin_cubin.c \
               common/fatbin_entries.c common/fatbin_ptx.c
BACKEND_SRC := host-backend/mearasd.c host-backend/worker.c host-backend/poller.c \
               host-backend/exec.c host-backend/handles.c host-backend/vaheap.c \
               host-backend/device_sim.c host-backend/device_cuda.c
CUDART_SRC  := $(wildcard guest/libcudart/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

.PHONY: all clean test gpu-test demo deps
all: $(BUILD)/bin/mearasd $(BUILD)/lib/libcudart.so.13

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bin/mearasd: $(call obj,$(BACKEND_SRC) $(COMMON_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -pthread -o $@ $^ -ldl -llz4 -lzstd

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

clean:
	rm -rf $(BUILD)
