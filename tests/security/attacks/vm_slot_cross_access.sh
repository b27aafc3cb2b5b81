# The VM's QEMU (trusted: it maps the whole BAR) uses slot A's rings to
# reach slot B's device memory and data area: a copy from B's device
# pointer, and a kernel in A on B's data area and device memory. Each slot
# has its own slot worker process that registered only its own data area
# with the device: refused, B's bytes intact.
. "$SEC_DIR/lib.sh"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
cat >"$SEC_TMP/k.cu" <<'CU'
extern "C" __global__ void mearas_sim_add_u32(unsigned *p, unsigned n, unsigned v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] += v;
}
CU
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -o "$SEC_TMP/k.fatbin" "$SEC_TMP/k.cu" || exit 1
VM_SOCK=$SEC_TMP/vm.sock
SEC_WAIT_SOCKETS=$VM_SOCK sec_start_daemon main --vm=v1:$VM_SOCK:64:1 || exit 1
sec_start_healthy "$SOCK"
if "$SEC_BIN/vm_slot_cross_access" "$VM_SOCK" "$SEC_TMP/k.fatbin" &&
	sec_expect_log 'sim: mearas_sim_add_u32 .* outside the registered host memory'; then
	sec_refused
fi
sec_finish
