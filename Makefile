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
BASEFLAGS := -std=gnu11 -fPIC -pthread -D_GNU_SOURCE -Iinclude -I$(BUILD)/gen -I$(CUDA_HOME)/include $(WARN) $(SAN)
LDSAN     := $(SAN)

COMMON_SRC  := common/log.c common/fdpass.c common/ring.c common/fatbin.c common/fatbin_cubin.c \
               common/fatbin_entries.c common/fatbin_ptx.c
include host-backend/sources.mk
BACKEND_SRC := $(MEARASD_SRC) $(IVSHMEM_SRC)
# the ops' code generated from include/mearas/ops.spec (scripts/opgen.py)
OPS_STAMP   := $(BUILD)/gen/.ops-stamp
OPS_GEN     := $(addprefix $(BUILD)/gen/,mearas/ops.gen.h mearas/ops_inline.gen.h mearas/ops_seeds.gen.h \
               rt_ops.gen.h rt_ops.gen.c exec_ops.gen.h exec_ops.gen.c mdev_ops.gen.h)
REMOTE_LINK := remote-link/build/libremote_link.a
# the control socket (assembly manager <-> mearasd): protobuf-c code generated
# from proto/*.proto at build time
PB_GEN      := $(BUILD)/gen/pb/common.pb-c.c $(BUILD)/gen/pb/control.pb-c.c
PB_OBJ      := $(patsubst $(BUILD)/gen/pb/%.c,$(BUILD)/obj-pb/%.o,$(PB_GEN))
CUDART_SRC  := $(wildcard guest/libcudart/*.c)
CUDART_OBJ  := $(patsubst %.c,$(BUILD)/obj-rt/%.o,$(CUDART_SRC) $(COMMON_SRC))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

.PHONY: all clean test gpu-test gpu-build demo deps install gen
all: $(BUILD)/bin/mearasd $(BUILD)/lib/libcudart.so.13

# every side's per-op code comes from the spec; the generator rewrites only
# files whose text changes, so a spec edit rebuilds what it changes
gen: $(OPS_STAMP)
$(OPS_STAMP): include/mearas/ops.spec scripts/opgen.py
	@mkdir -p $(dir $@)
	python3 scripts/opgen.py include/mearas/ops.spec $(BUILD)/gen
	@touch $@
$(OPS_GEN): $(OPS_STAMP) ;

$(BUILD)/obj/%.o: %.c | $(OPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# the ivshmem server library defines _GNU_SOURCE itself
$(BUILD)/obj/host-backend/vm/ivshmem/%.o: host-backend/vm/ivshmem/%.c | $(OPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -D_GNU_SOURCE,$(BASEFLAGS)) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/pb/%.pb-c.c $(BUILD)/gen/pb/%.pb-c.h: proto/%.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen/pb -Iproto $<

# generated code: not held to our warning flags
$(BUILD)/obj-pb/%.o: $(BUILD)/gen/pb/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -fPIC $(SAN) $(CFLAGS) -I$(BUILD)/gen/pb -c $< -o $@

$(call obj,$(BACKEND_SRC)): CFLAGS += -I$(BUILD)/gen/pb
$(call obj,$(BACKEND_SRC)): | $(PB_GEN:.c=.h)

$(BUILD)/obj/host-backend/%.o: BASEFLAGS += -Ihost-backend -Iremote-link/include

.PHONY: $(REMOTE_LINK)
$(REMOTE_LINK):
	$(MAKE) -C remote-link BUILD=build build/libremote_link.a

# protobuf-c is linked statically: GPU nodes need not have it installed
# generated back-end code (exec_ops.gen.c)
EXEC_GEN_OBJ := $(patsubst %.c,$(BUILD)/obj/gen/%.o,$(EXEC_GEN))
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -Ihost-backend -Iremote-link/include $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bin/mearasd: $(call obj,$(BACKEND_SRC) $(COMMON_SRC)) $(EXEC_GEN_OBJ) $(PB_OBJ) $(REMOTE_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -pthread -o $@ $^ -ldl -llz4 -lzstd -Wl,-Bstatic -lprotobuf-c -Wl,-Bdynamic -lssl -lcrypto -libverbs

# ---- guest runtime library: hidden by default, CUDA entry points exported
# under NVIDIA's symbol version so unmodified binaries bind to it
$(BUILD)/gen/cuda_errors.gen.h: guest/libcudart/gen_errors.py $(CUDA_HOME)/include/driver_types.h
	@mkdir -p $(dir $@)
	python3 $^ $@

$(BUILD)/obj-rt/%.o: %.c $(BUILD)/gen/cuda_errors.gen.h | $(OPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -I$(BUILD)/gen -Iguest/libcudart -fvisibility=hidden $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/unsupported.gen.c: guest/libcudart/gen_unsupported.sh guest/libcudart/cudart13.symbols $(CUDART_OBJ)
	sh guest/libcudart/gen_unsupported.sh guest/libcudart/cudart13.symbols $(CUDART_OBJ) > $@

$(BUILD)/gen/libcudart.map: guest/libcudart/cudart13.symbols
	@mkdir -p $(dir $@)
	{ echo 'libcudart.so.13 { global:'; sed 's/#.*//;/^$$/d;s/$$/;/' $<; echo 'local: *; };'; } > $@

$(BUILD)/obj-rt/unsupported.gen.o: $(BUILD)/gen/unsupported.gen.c
	$(CC) $(BASEFLAGS) -Iguest/libcudart -fvisibility=hidden $(CFLAGS) -c $< -o $@

$(BUILD)/obj-rt/rt_ops.gen.o: $(BUILD)/gen/rt_ops.gen.c $(BUILD)/gen/cuda_errors.gen.h
	$(CC) $(BASEFLAGS) -Iguest/libcudart -fvisibility=hidden $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/lib/libcudart.so.13: $(CUDART_OBJ) $(BUILD)/obj-rt/rt_ops.gen.o $(BUILD)/obj-rt/unsupported.gen.o \
		$(BUILD)/gen/libcudart.map
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -shared -pthread -Wl,-soname,libcudart.so.13 -Wl,--version-script=$(BUILD)/gen/libcudart.map \
		-Wl,--no-undefined -o $@ $(CUDART_OBJ) $(BUILD)/obj-rt/rt_ops.gen.o $(BUILD)/obj-rt/unsupported.gen.o -llz4 -lzstd
	ln -sf libcudart.so.13 $(BUILD)/lib/libcudart.so

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

NVCC ?= $(CUDA_HOME)/bin/nvcc
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
$(BUILD)/experiments/microbench: experiments/microbench/microbench.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -cudart shared $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<

$(BUILD)/tests/gpu/isolation: tests/gpu/isolation.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -cudart shared $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<

$(BUILD)/tests/gpu/watchdog: tests/gpu/watchdog.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -cudart shared $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<
$(BUILD)/tests/gpu/event_destroy_wait: tests/gpu/event_destroy_wait.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 -cudart shared $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<

$(BUILD)/tests/gpu/tcp_bench: tests/gpu/tcp_bench.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -pthread -o $@ $<

# a static busybox travels with build/ to the GPU machine, whose image has no
# iproute2: scripts/netns-pair.sh makes the remote step's namespaces with it
# (Debian busybox-static, scripts/deps/apt-core.txt). Without it that step
# runs over loopback and says so.
BUSYBOX ?= /bin/busybox
.PHONY: busybox
busybox:
	@if [ ! -x $(BUSYBOX) ]; then \
		echo "busybox: $(BUSYBOX) missing (apt-get install busybox-static): no $(BUILD)/tools/busybox;" \
			"on a GPU machine without iproute2 the remote step will run over loopback" >&2; \
	elif ldd $(BUSYBOX) >/dev/null 2>&1; then \
		echo "busybox: $(BUSYBOX) is not static (busybox-static is): not carried to $(BUILD)/tools" >&2; \
	elif ! cmp -s $(BUSYBOX) $(BUILD)/tools/busybox; then \
		mkdir -p $(BUILD)/tools && cp $(BUSYBOX) $(BUILD)/tools/busybox && \
		echo "busybox: $(BUSYBOX) -> $(BUILD)/tools/busybox"; \
	fi

gpu-build: all busybox $(BUILD)/experiments/microbench $(BUILD)/tests/gpu/isolation $(BUILD)/tests/gpu/tcp_bench \
	   $(BUILD)/tests/gpu/watchdog $(BUILD)/tests/gpu/event_destroy_wait
	$(MAKE) -C tests/cuda
	$(MAKE) -C experiments/apps
	$(MAKE) -C tests/control all

deps:
	scripts/install-deps.sh

# CPU lane (CI): install what is missing, build, run every suite
test: deps
	$(MAKE) all
	scripts/run-tests.sh

# the main job: mearasd on the local GPUs (or the host-memory model where
# there is none) and CUDA programs through it; table last
demo: deps
	$(MAKE) gpu-build
	scripts/demo.sh

# GPU lane: build (here or there) and run everything in one call; table last
gpu-test: gpu-build
	scripts/gpu-lane.sh

# mearasd, the runtime library (where `mearas run` looks for it), the guest
# module's sources, and the assembly manager with its libvirt hook
PREFIX ?= /usr/local
install: all
	install -D -m 0755 $(BUILD)/bin/mearasd $(DESTDIR)$(PREFIX)/sbin/mearasd
	install -D -m 0755 $(BUILD)/lib/libcudart.so.13 $(DESTDIR)$(PREFIX)/lib/mearas/libcudart.so.13
	ln -sf libcudart.so.13 $(DESTDIR)$(PREFIX)/lib/mearas/libcudart.so
	$(MAKE) -C assembly-manager install

clean:
	rm -rf $(BUILD)
include experiments/experiments.mk
