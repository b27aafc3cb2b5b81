# Sources of mearasd by subsystem, named once for every build that compiles
# them (the top-level Makefile, tests/unit, tests/fuzz, tests/remote): paths
# from the repository root. Includes are written from host-backend/
# ("core/worker.h"), or plain within one folder; compile with -Ihost-backend.
# EXEC_GEN are generated into build/gen (make gen).
HB := host-backend
# record execution (the op handlers; decoding generated from the op spec)
EXEC_SRC := $(addprefix $(HB)/core/,exec.c exec_check.c exec_objects.c exec_memory.c exec_module.c \
            exec_stream.c exec_graph.c exec_vmm.c exec_tensormap.c exec_link.c exec_array.c)
EXEC_GEN := exec_ops.gen.c
# a worker and its vGPUs besides exec: region and vGPU setup, handles, device
# memory, the poller (the local engine), GPU time limit, output
CORE_SRC := $(addprefix $(HB)/core/,worker.c handles.c vaheap.c watchdog.c output.c poller.c fatal.c cpus.c)
# what clients of one identity hold together (a shared table)
TENANT_SRC := $(HB)/core/tenant.c
# serving a client (a CUDA process) on its connection
CLIENT_SRC := $(HB)/core/client.c
# the host-memory device model (the sim) and its linker model
SIM_SRC := $(addprefix $(HB)/device/,device_sim.c device_sim_link.c device_sim_array.c device_sim_memop.c)
DEVICE_SRC := $(SIM_SRC) $(addprefix $(HB)/device/,device_cuda.c pcie_link.c kmd_version.c)
GPUPROBE_SRC := $(HB)/device/gpuprobe.c
VM_SRC := $(addprefix $(HB)/vm/,vm_server.c vm_worker.c vm_slot.c vm_scan.c vm_output.c)
IVSHMEM_SRC := $(addprefix $(HB)/vm/ivshmem/,ivshmem_server.c ivshmem_msg.c)
IVSHMEM_SERVE_SRC := $(HB)/vm/ivshmem/tools/ivshmem_serve.c
# remote vGPUs: what the serving node's session runs on (its trackers and
# tokens), then the forwarder, the serving node and their configuration
REMOTE_TRACK_SRC := $(addprefix $(HB)/remote/,capture.c mapped.c)
REMOTE_SESSION_SRC := $(addprefix $(HB)/remote/,session.c session_feed.c session_reply.c tokens.c) \
                      $(REMOTE_TRACK_SRC)
REMOTE_SRC := $(addprefix $(HB)/remote/,config.c forward.c forward_d2h.c forward_mapped.c reap.c serve.c \
              serve_worker.c) $(REMOTE_SESSION_SRC)
CONTROL_SRC := $(addprefix $(HB)/control/,control.c control_proto.c control_profile.c control_vm.c assembly.c \
               attached.c vgpustats.c)
# the metrics endpoint (libmicrohttpd; NVML by dlopen)
METRICS_SRC := $(addprefix $(HB)/control/,metrics_http.c metrics_text.c metrics_gpu.c)
MEARASD_SRC := $(HB)/mearasd.c $(CLIENT_SRC) $(EXEC_SRC) $(CORE_SRC) $(TENANT_SRC) $(DEVICE_SRC) \
               $(GPUPROBE_SRC) $(VM_SRC) $(REMOTE_SRC) $(CONTROL_SRC)
# the config file (--config, a TOML subset)
CONFIG_FILE_SRC := $(HB)/core/config_file.c
MEARASD_SRC += $(CONFIG_FILE_SRC)
MEARASD_SRC += $(METRICS_SRC)
