#!/usr/bin/env bash
# GPU lane, assembly manager part: `mearas run --vgpus 2 -- ./probe` against
# the mearasd of this node (control socket CTL, data socket SOCK) with the
# embedded file registry and the GPUs mearasd reports; the probe must see 2 devices with
# the GPU's properties, the manager's quota as memory, and the quota enforced.
#   scripts/gpu-assembly.sh SOCK CTL OUTDIR
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sock=$1 ctl=$2 out=$3
cfg=$out/am.toml
cat >"$cfg" <<EOT
[node]
name = "$(hostname)"
address = "127.0.0.1:7100"
max_vgpus_per_gpu = 2
[registry]
backend = "file"
path = "$out/registry.json"
[mearasd]
control_socket = "$ctl"
client_socket = "$sock"
timeout = 20
[runtime]
libdir = "$top/build/lib"
EOT
am() { PYTHONPATH=$top/assembly-manager python3 -m mearas_am.cli --config "$cfg" "$@"; }
am node-agent --once >"$out/am-agent.txt" 2>&1 || { echo "assembly: node-agent failed: $(tail -3 "$out/am-agent.txt")"; exit 1; }
am nodes >"$out/am-nodes.txt" 2>&1
CUDA_VISIBLE_DEVICES= am run --vgpus 2 -- "$top/build/tests/control/assembly_probe" >"$out/am-run.txt" 2>&1
rc=$?
gpu_mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
python3 - "$out/am-run.txt" "$rc" <<'EOT'
import sys
kv = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if "=" in l and " " not in l.split("=", 1)[0])
rc = int(sys.argv[2])
ok = (rc == 0 and kv.get("count") == "2" and kv.get("dev0_over_quota_status") == "2"
      and kv.get("dev1_over_quota_status") == "2" and kv.get("dev0_within_quota_status") == "0"
      and kv.get("dev0_total") == kv.get("dev1_total") and kv.get("dev0_name", "").startswith("NVIDIA"))
total = int(kv.get("dev0_total", "0")) >> 20
print(f"assembly: {'ok' if ok else 'FAILED'}: mearas run --vgpus 2 saw {kv.get('count')} devices "
      f"({kv.get('dev0_name')}, cc {kv.get('dev0_cc')}, {kv.get('dev0_sms')} SMs), quota {total} MiB each, "
      f"cudaMalloc over quota -> {kv.get('dev0_over_quota_status')} (2 = cudaErrorMemoryAllocation), within -> "
      f"{kv.get('dev0_within_quota_status')} (exit {rc})")
sys.exit(0 if ok else 1)
EOT
