# mearas: one Makefile builds everything.
#   make            build the runtime library, mearasd and the tools
#   make test       install what is missing, build, run the CPU-lane tests
#   make gpu-test   build and run the GPU lane (on a GPU machine), table last
#   make gpu-frameworks  the framework suite alone (PyTorch, CuPy, JAX; GPU machine)
#   make demo       the main job: a small end-to-end run, table last
CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
# code generated from the op spec and the protobuf schemas: one place for
# every build (sanitizer builds under another BUILD use it too), and for the
# test builds that include it (scripts/opgen.mk, tests/fuzz)
GEN       := build/gen
CC        ?= gcc
SAN       ?=
CFLAGS    ?= -O2 -g
WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASEFLAGS := -std=gnu11 -fPIC -pthread -D_GNU_SOURCE -Iinclude -I$(GEN) -I$(BUILD)/gen -I$(CUDA_HOME)/include \
             $(WARN) $(SAN)
LDSAN     := $(SAN)

COMMON_SRC  := common/log.c common/fdpass.c common/ring.c common/fatbin.c common/fatbin_cubin.c \
               common/fatbin_entries.c common/fatbin_ptx.c
include host-backend/sources.mk
# the ops' code generated from include/mearas/ops.spec (scripts/opgen.py)
OPS_STAMP   := $(GEN)/.ops-stamp
OPS_GEN     := $(addprefix $(GEN)/,mearas/ops.gen.h mearas/ops_inline.gen.h mearas/ops_seeds.gen.h \
               rt_ops.gen.h rt_ops.gen.c exec_ops.gen.h exec_ops.gen.c mdev_ops.gen.h)
# protobuf-c code from proto/*.proto: the control socket's (mearasd <->
# assembly manager) and remote-link's messages
PB_DIR      := $(GEN)/pb
PB_H        := $(addprefix $(PB_DIR)/,common.pb-c.h control.pb-c.h link.pb-c.h)
pb_obj       = $(patsubst %,$(BUILD)/obj-pb/%.pb-c.o,$(1))
# the guest: the core (connection, objects, copies) and the driver API in
# libcuda.so.1, the runtime API in libcudart.so.13 over it
CORE_SRC    := $(wildcard guest/core/*.c)
CUDRV_SRC   := $(wildcard guest/libcuda/*.c)
CUDRV_OBJ   := $(patsubst %.c,$(BUILD)/obj-rt/%.o,$(CORE_SRC) $(CUDRV_SRC) $(COMMON_SRC))
CUDART_SRC  := $(wildcard guest/libcudart/*.c)
CUDART_OBJ  := $(patsubst %.c,$(BUILD)/obj-rt/%.o,$(CUDART_SRC) $(COMMON_SRC))
# the libraries: remote-link (node-to-node links, with its test programs)
# and the host side of QEMU's ivshmem-doorbell protocol
LINK_SRC    := $(addprefix remote-link/src/,util.c wire.c transport_tcp.c transport_sealed.c transport_verbs.c tls.c records.c \
               handshake.c client.c server.c stripe_rx.c stripe_tx.c)
LINK_LIB    := $(BUILD)/lib/libremote_link.a
LINK_TESTS  := $(BUILD)/remote-link/test_unit $(BUILD)/remote-link/test_stripe $(BUILD)/remote-link/test_records \
               $(BUILD)/remote-link/link_node
# libsodium (short link records, remote-link/src/records.h) is linked statically:
# GPU nodes need not have it installed
SODIUM_LIB  := -Wl,-Bstatic -lsodium -Wl,-Bdynamic
LINK_LIBS   := -lprotobuf-c $(SODIUM_LIB) -lssl -lcrypto -libverbs -pthread
IVSHMEM_LIB := $(BUILD)/lib/libmearas_ivshmem.a
IVSHMEM_SERVE := $(BUILD)/bin/mearas-ivshmem-serve
# NVML for the vGPUs (libnvidia-ml.so.1) over the same core, built against
# NVIDIA's nvml.h: the toolkit's, else PyPI nvidia-nvml-dev's (looked up once)
ifeq ($(origin NVML_INC),undefined)
NVML_INC    := $(shell CUDA_HOME=$(CUDA_HOME) scripts/nvml-include.sh)
endif
NVML_SRC    := $(wildcard guest/libnvml/*.c)
NVML_OBJ    := $(patsubst %.c,$(BUILD)/obj-nvml/%.o,$(NVML_SRC) common/log.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

.PHONY: all clean test gpu-test gpu-frameworks gpu-build demo deps install gen pb remote-link ivshmem FORCE
all: $(BUILD)/bin/mearasd $(BUILD)/lib/libcudart.so.13 $(BUILD)/lib/libcuda.so.1 $(BUILD)/lib/libnvidia-ml.so.1

# the version every tool reports (--version): VERSION and the git commit
# (scripts/version.sh), rewritten only when it changes
VERSION_H := $(BUILD)/gen/mearas_version.h
$(VERSION_H): FORCE
	@mkdir -p $(dir $@)
	@scripts/version.sh c-header >$@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@; }
FORCE:
$(call obj,host-backend/mearasd.c $(IVSHMEM_SERVE_SRC)): $(VERSION_H)

# every side's per-op code comes from the spec; the generator rewrites only
# files whose text changes, so a spec edit rebuilds what it changes
gen: $(OPS_STAMP)
$(OPS_STAMP): include/mearas/ops.spec scripts/opgen.py
	@mkdir -p $(dir $@)
	python3 scripts/opgen.py include/mearas/ops.spec $(GEN)
	@touch $@
$(OPS_GEN): $(OPS_STAMP) ;

pb: $(PB_H)
$(PB_DIR)/%.pb-c.c $(PB_DIR)/%.pb-c.h: proto/%.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(PB_DIR) -Iproto $<
.SECONDARY: $(PB_H) $(PB_H:.h=.c)

# generated code: not held to our warning flags
$(BUILD)/obj-pb/%.o: $(PB_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -fPIC $(SAN) $(CFLAGS) -I$(PB_DIR) -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(OPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/host-backend/%.o: BASEFLAGS += -Ihost-backend -Iremote-link/include -I$(PB_DIR)
$(call obj,$(MEARASD_SRC)): | $(PB_H)

# ---- remote-link: its own warning flags, C11
LINK_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -Iremote-link/include -Iremote-link/src -Iinclude \
              -I$(PB_DIR) $(SAN) $(CFLAGS)
$(BUILD)/obj/remote-link/%.o: remote-link/%.c | $(PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(LINK_CFLAGS) -MMD -MP -c $< -o $@
$(LINK_LIB): $(call obj,$(LINK_SRC)) $(call pb_obj,common link)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# its tests (remote-link/tests, run by `make -C remote-link test`) and their
# checks and case runner (tests/check.h)
$(BUILD)/obj/remote-link/tests/%.o: LINK_CFLAGS += -Iremote-link/tests -Itests -Wshadow -Wstrict-prototypes \
                                                   -Wmissing-prototypes
$(BUILD)/remote-link/test_unit: $(call obj,$(addprefix remote-link/tests/,test_unit.c test_server.c \
                                tamper_proxy.c)) $(LINK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LINK_LIBS)
$(BUILD)/remote-link/test_stripe: $(call obj,$(addprefix remote-link/tests/,test_stripe.c test_server.c)) $(LINK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LINK_LIBS)
$(BUILD)/remote-link/test_records: $(call obj,remote-link/tests/test_records.c) $(LINK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LINK_LIBS)
$(BUILD)/remote-link/link_node: $(call obj,$(addprefix remote-link/tests/,link_node.c test_server.c)) $(LINK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LINK_LIBS)
remote-link: $(LINK_LIB) $(LINK_TESTS)

# ---- the ivshmem server library (defines _GNU_SOURCE itself) and its
# standalone server (vm-configs/README.md)
$(BUILD)/obj/host-backend/vm/ivshmem/%.o: host-backend/vm/ivshmem/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -D_GNU_SOURCE,$(BASEFLAGS)) -Ihost-backend/vm/ivshmem $(CFLAGS) -MMD -MP -c $< -o $@
$(IVSHMEM_LIB): $(call obj,$(IVSHMEM_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(IVSHMEM_SERVE): $(call obj,$(IVSHMEM_SERVE_SRC)) $(IVSHMEM_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -pthread -o $@ $^
ivshmem: $(IVSHMEM_LIB) $(IVSHMEM_SERVE)

# generated back-end code (exec_ops.gen.c)
EXEC_GEN_OBJ := $(patsubst %.c,$(BUILD)/obj/gen/%.o,$(EXEC_GEN))
$(BUILD)/obj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -Ihost-backend -Iremote-link/include $(CFLAGS) -MMD -MP -c $< -o $@

# protobuf-c and libsodium are linked statically: GPU nodes need not have them installed
$(BUILD)/bin/mearasd: $(call obj,$(MEARASD_SRC) $(COMMON_SRC)) $(EXEC_GEN_OBJ) $(call pb_obj,common control) \
		$(LINK_LIB) $(IVSHMEM_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -pthread -o $@ $^ -ldl -llz4 -lzstd -Wl,-Bstatic -lprotobuf-c -lsodium -Wl,-Bdynamic -lssl -lcrypto -libverbs

# ---- guest runtime library: hidden by default, CUDA entry points exported
# under NVIDIA's symbol version so unmodified binaries bind to it
$(BUILD)/gen/cuda_errors.gen.h: guest/libcudart/gen_errors.py $(CUDA_HOME)/include/driver_types.h
	@mkdir -p $(dir $@)
	python3 $^ $@

$(BUILD)/gen/cu_errors.gen.h: guest/libcudart/gen_errors.py $(CUDA_HOME)/include/cuda.h
	@mkdir -p $(dir $@)
	python3 $< --driver $(CUDA_HOME)/include/cuda.h $@

# no sibling calls: an entry point that ends in a call to a helper keeps its
# frame, so a refusal's log line can name it (guest/libcuda/errors.c)
$(BUILD)/obj-rt/%.o: %.c $(BUILD)/gen/cuda_errors.gen.h $(BUILD)/gen/cu_errors.gen.h | $(OPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -I$(BUILD)/gen -Iguest/core -Iguest/libcudart -Iguest/libcuda -fvisibility=hidden \
		-fno-optimize-sibling-calls $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/unsupported.gen.c: scripts/gen_unsupported.sh guest/libcudart/cudart13.symbols $(CUDART_OBJ)
	sh scripts/gen_unsupported.sh mearas_unsupported_call guest/libcudart/cudart13.symbols $(CUDART_OBJ) > $@.tmp
	mv $@.tmp $@

$(BUILD)/gen/libcudart.map: guest/libcudart/cudart13.symbols
	@mkdir -p $(dir $@)
	{ echo 'libcudart.so.13 { global:'; sed 's/#.*//;/^$$/d;s/$$/;/' $<; echo 'local: *; };'; } > $@

$(BUILD)/obj-rt/unsupported.gen.o: $(BUILD)/gen/unsupported.gen.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -Iguest/core -Iguest/libcudart -fvisibility=hidden $(CFLAGS) -c $< -o $@

$(BUILD)/obj-rt/rt_ops.gen.o: $(GEN)/rt_ops.gen.c $(BUILD)/gen/cuda_errors.gen.h
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -Iguest/core -fvisibility=hidden $(CFLAGS) -MMD -MP -c $< -o $@

# the driver's generated parts: the cuGetProcAddress table, NotSupported
# stubs for the exports no object defines, the version script (the core's
# functions go to libcudart.so.13 under the private version MEARAS_CORE_1)
LIBCUDA_IMPL_OBJ  := $(CUDRV_OBJ) $(BUILD)/obj-rt/rt_ops.gen.o
LIBCUDA_MAP_EXTRA := rt rt_* dh_* dm_* tp_* tpu_* tpv_* mearas_front_end mearas_cu_runtime_function
include guest/libcuda/gen.mk
CUDRV_GEN_OBJ := $(BUILD)/obj-rt/procaddr.gen.o $(BUILD)/obj-rt/cu_unsupported.gen.o
$(BUILD)/obj-rt/guest/libcuda/exptables.o: $(BUILD)/gen/exptables_unserved.gen.h
$(BUILD)/obj-rt/%.gen.o: $(BUILD)/gen/%.gen.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -Iguest/libcuda -fvisibility=hidden $(CFLAGS) -c $< -o $@

$(BUILD)/lib/libcuda.so.1: $(LIBCUDA_IMPL_OBJ) $(CUDRV_GEN_OBJ) $(BUILD)/gen/libcuda.map
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -shared -pthread -Wl,-soname,libcuda.so.1 -Wl,--version-script=$(BUILD)/gen/libcuda.map \
		-Wl,-Bsymbolic -Wl,--no-undefined -o $@ $(LIBCUDA_IMPL_OBJ) $(CUDRV_GEN_OBJ) -llz4 -lzstd
	ln -sf libcuda.so.1 $(BUILD)/lib/libcuda.so

$(BUILD)/lib/libcudart.so.13: $(CUDART_OBJ) $(BUILD)/obj-rt/unsupported.gen.o $(BUILD)/gen/libcudart.map \
		$(BUILD)/lib/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -shared -pthread -Wl,-soname,libcudart.so.13 -Wl,--version-script=$(BUILD)/gen/libcudart.map \
		-Wl,--no-undefined -Wl,-rpath,'$$ORIGIN' -o $@ $(CUDART_OBJ) $(BUILD)/obj-rt/unsupported.gen.o \
		$(BUILD)/lib/libcuda.so.1 -llz4 -lzstd
	ln -sf libcudart.so.13 $(BUILD)/lib/libcudart.so

# ---- NVML (libnvidia-ml.so.1): NVIDIA's entry points, unversioned as in
# NVIDIA's library; those guest/libnvml does not define are stubs returning
# NVML_ERROR_NOT_SUPPORTED (scripts/gen_unsupported.sh over nvml.symbols). The core
# comes from libcuda.so.1 (MEARAS_CORE_1), found beside it through $ORIGIN.
.PHONY: nvml-header
nvml-header:
	@if [ -z "$(NVML_INC)" ] || [ ! -f "$(NVML_INC)/nvml.h" ]; then \
		echo "libnvidia-ml.so.1 needs NVIDIA's nvml.h: not in $(CUDA_HOME)/include nor from PyPI" \
			"nvidia-nvml-dev (scripts/install-deps.sh installs it; or set NVML_INC=DIR)" >&2; exit 1; fi

$(BUILD)/obj-nvml/%.o: %.c $(BUILD)/gen/cuda_errors.gen.h | $(OPS_STAMP) nvml-header
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -I$(NVML_INC) -I$(BUILD)/gen -Iguest/core -Iguest/libnvml -DNVML_NO_UNVERSIONED_FUNC_DEFS \
		-fvisibility=hidden $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/nvml_unsupported.gen.c: scripts/gen_unsupported.sh guest/libnvml/nvml.symbols $(NVML_OBJ)
	@mkdir -p $(dir $@)
	sh scripts/gen_unsupported.sh nvml_unsupported_call guest/libnvml/nvml.symbols $(NVML_OBJ) > $@.tmp
	mv $@.tmp $@

$(BUILD)/obj-nvml/nvml_unsupported.gen.o: $(BUILD)/gen/nvml_unsupported.gen.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -fvisibility=hidden $(CFLAGS) -c $< -o $@

# no version node: NVIDIA's libnvidia-ml.so.1 exports its names unversioned
$(BUILD)/gen/libnvml.map: guest/libnvml/nvml.symbols
	@mkdir -p $(dir $@)
	{ echo '{ global:'; sed 's/#.*//;s/[[:space:]]//g;/^$$/d;s/.*/  &;/' $<; echo 'local: *; };'; } > $@

$(BUILD)/lib/libnvidia-ml.so.1: $(NVML_OBJ) $(BUILD)/obj-nvml/nvml_unsupported.gen.o $(BUILD)/gen/libnvml.map \
		$(BUILD)/lib/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -shared -pthread -Wl,-soname,libnvidia-ml.so.1 -Wl,--version-script=$(BUILD)/gen/libnvml.map \
		-Wl,--no-undefined -Wl,-rpath,'$$ORIGIN' -o $@ $(NVML_OBJ) $(BUILD)/obj-nvml/nvml_unsupported.gen.o \
		$(BUILD)/lib/libcuda.so.1
	ln -sf libnvidia-ml.so.1 $(BUILD)/lib/libnvidia-ml.so

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

NVCC ?= $(CUDA_HOME)/bin/nvcc
NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
$(BUILD)/experiments/microbench: experiments/microbench/microbench.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -cudart shared $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<

# nvcc's default, static runtime: NVIDIA's runtime over mearas's libcuda.so.1
$(BUILD)/experiments/microbench-static: experiments/microbench/microbench.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O2 $(NVCC_ARCH) -Xcompiler -Wall,-Werror -o $@ $<

# what the driver calls on mearasd's synchronization path cost, natively
$(BUILD)/experiments/drvcost: experiments/microbench/drvcost.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) -I$(CUDA_HOME)/include $(CFLAGS) -O2 -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

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

$(BUILD)/tests/gpu/tcp_rtt: tests/gpu/tcp_rtt.c
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

# iperf3 (the remote step's bandwidth yardstick) and iproute2's tc (its shaped
# run: tbf on the veth pair) travel the same way, each with the shared
# libraries the GPU machine may lack (scripts/carry-tool.sh: not glibc's, not
# mearasd's): build/tools/iperf3/, build/tools/tc/. Debian's iperf3 and iproute2
# (scripts/deps/apt-core.txt); without one, that step says so and goes on.
IPERF3 ?= /usr/bin/iperf3
TC ?= /usr/sbin/tc
.PHONY: tools
tools: all
	-@scripts/carry-tool.sh $(IPERF3) $(BUILD)/tools/iperf3
	-@scripts/carry-tool.sh $(TC) $(BUILD)/tools/tc

# mearasd with the remote path's hop stamps compiled in (include/mearas/hoptrace.h),
# for scripts/remote-latency.sh --hops; its objects under build/hop
.PHONY: hoptrace
hoptrace:
	$(MAKE) BUILD=build/hop CFLAGS='$(CFLAGS) -DMEARAS_HOPTRACE' build/hop/bin/mearasd

gpu-build: all busybox tools $(BUILD)/experiments/microbench $(BUILD)/experiments/microbench-static $(BUILD)/experiments/drvcost \
	   $(BUILD)/tests/gpu/isolation $(BUILD)/tests/gpu/tcp_bench $(BUILD)/tests/gpu/tcp_rtt \
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

# the framework suite alone (PyTorch, CuPy, JAX natively and through mearas,
# experiments/frameworks/README.md): about 8 minutes, part of gpu-test too
# (GPU_LANE_FRAMEWORKS=0 leaves it out there, for 10-minute calls); results
# in experiments/results/frameworks.json and frameworks.png, logs in
# build/frameworks; FW_ARGS passes options (e.g. FW_ARGS='--only cupy,jax')
FW_ARGS ?=
gpu-frameworks: all
	python3 experiments/frameworks/suite.py $(FW_ARGS)

# ---- install, uninstall, packages (docs/packaging.md)
# `make install` puts the host side under $(DESTDIR)$(PREFIX), its
# configuration under $(DESTDIR)$(SYSCONFDIR): mearasd, the systemd units, a
# private copy of the front-end libraries (libcuda.so.1, libcudart.so.13,
# libnvidia-ml.so.1 in $(MEARAS_LIBDIR), not on the loader's path: `mearas
# run` puts it on LD_LIBRARY_PATH) and the assembly manager with its libvirt
# hook (assembly-manager/Makefile). `make install-guest` puts the guest side:
# the libraries on the loader's path ($(GUEST_LIBDIR) and an ld.so.conf.d
# entry: for VMs, where no NVIDIA driver is to be shadowed) and the kernel
# module as DKMS source. Nothing is written outside $(DESTDIR); the uninstall
# targets remove what the install targets put (a configuration file only
# while it is unchanged). `make deb` builds the mearas-host and mearas-guest
# packages from the same targets (scripts/mkdeb.sh) into $(BUILD)/deb.
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
SBINDIR        ?= $(PREFIX)/sbin
SYSCONFDIR     ?= /etc
MEARAS_LIBDIR  ?= $(PREFIX)/lib/mearas
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
GUEST_LIBDIR   ?= $(PREFIX)/lib/$(shell $(CC) -print-multiarch)/mearas
DKMS_SRCDIR    ?= $(PREFIX)/src
MEARAS_VERSION ?= $(shell scripts/pkg-version.sh)
FRONT_LIBS     := libcuda.so.1 libcudart.so.13 libnvidia-ml.so.1
# mearasd's unit (host-backend/systemd), its ExecStart rewritten
MEARASD_UNIT   := $(wildcard host-backend/systemd/mearasd.service)
# the unit's ExecStart names the installed mearasd
UNIT_PATHS      = sed -e 's|^ExecStart=[^ ]*/mearasd\b|ExecStart=$(SBINDIR)/mearasd|'
INSTALL_DIRS    = BINDIR=$(BINDIR) SYSCONFDIR=$(SYSCONFDIR) MEARAS_LIBDIR=$(MEARAS_LIBDIR) \
                  SYSTEMDUNITDIR=$(SYSTEMDUNITDIR)

.PHONY: install uninstall install-guest uninstall-guest deb
install: all
	install -D -m 0755 $(BUILD)/bin/mearasd $(DESTDIR)$(SBINDIR)/mearasd
	install -d $(DESTDIR)$(MEARAS_LIBDIR)
	for l in $(FRONT_LIBS); do install -m 0644 $(BUILD)/lib/$$l $(DESTDIR)$(MEARAS_LIBDIR)/$$l || exit 1; done
	ln -sfn libcudart.so.13 $(DESTDIR)$(MEARAS_LIBDIR)/libcudart.so
ifneq ($(MEARASD_UNIT),)
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	$(UNIT_PATHS) $(MEARASD_UNIT) > $(DESTDIR)$(SYSTEMDUNITDIR)/mearasd.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/mearasd.service
endif
	$(MAKE) -C assembly-manager install DESTDIR=$(abspath $(DESTDIR)) PREFIX=$(PREFIX) $(INSTALL_DIRS)

uninstall:
	$(MAKE) -C assembly-manager uninstall DESTDIR=$(abspath $(DESTDIR)) PREFIX=$(PREFIX) $(INSTALL_DIRS)
	rm -f $(DESTDIR)$(SBINDIR)/mearasd $(DESTDIR)$(SYSTEMDUNITDIR)/mearasd.service
	rm -f $(addprefix $(DESTDIR)$(MEARAS_LIBDIR)/,$(FRONT_LIBS) libcudart.so)
	[ ! -d $(DESTDIR)$(MEARAS_LIBDIR) ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(MEARAS_LIBDIR)
	[ ! -d $(DESTDIR)$(SYSCONFDIR)/mearas ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(SYSCONFDIR)/mearas

# the guest side; the DKMS tree is guest/kmod with the one header it takes
# from include/ beside it, and without -Werror (it builds on kernels this
# project has not seen)
DKMS_TREE = $(DESTDIR)$(DKMS_SRCDIR)/mearas-$(MEARAS_VERSION)
install-guest: all
	install -d $(DESTDIR)$(GUEST_LIBDIR)
	for l in $(FRONT_LIBS); do install -m 0644 $(BUILD)/lib/$$l $(DESTDIR)$(GUEST_LIBDIR)/$$l || exit 1; done
	install -d $(DESTDIR)$(SYSCONFDIR)/ld.so.conf.d
	echo '$(GUEST_LIBDIR)' > $(DESTDIR)$(SYSCONFDIR)/ld.so.conf.d/mearas-guest.conf
	install -d $(DKMS_TREE)/include/mearas
	install -m 0644 guest/kmod/*.c guest/kmod/*.h $(DKMS_TREE)/
	install -m 0644 include/mearas/kmod_uapi.h $(DKMS_TREE)/include/mearas/
	sed -e 's|$$(src)/\.\./\.\./include|$$(src)/include|' -e 's| -Werror||' guest/kmod/Kbuild > $(DKMS_TREE)/Kbuild
	sed 's/@VERSION@/$(MEARAS_VERSION)/' scripts/dkms.conf.in > $(DKMS_TREE)/dkms.conf
	chmod 0644 $(DKMS_TREE)/Kbuild $(DKMS_TREE)/dkms.conf
	@if [ -z "$(DESTDIR)" ]; then ldconfig; fi

uninstall-guest:
	rm -f $(addprefix $(DESTDIR)$(GUEST_LIBDIR)/,$(FRONT_LIBS)) $(DESTDIR)$(SYSCONFDIR)/ld.so.conf.d/mearas-guest.conf
	[ ! -d $(DESTDIR)$(GUEST_LIBDIR) ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(GUEST_LIBDIR)
	rm -rf $(DKMS_TREE)
	@if [ -z "$(DESTDIR)" ]; then ldconfig; fi

deb: all
	$(MAKE) -C assembly-manager proto
	scripts/mkdeb.sh $(BUILD)/deb $(MEARAS_VERSION)

clean:
	rm -rf $(BUILD)
include experiments/experiments.mk
