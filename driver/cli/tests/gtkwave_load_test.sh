#!/usr/bin/env bash
# GTKWave itself, headless under Xvfb, opens a waveform of `tessera run
# --waves` through scripts/waves (so with the save file tessera wrote) and
# displays every signal the save file names.
#   gtkwave_load_test.sh TESSERA_BIN SOURCE_DIR
set -euo pipefail
tessera=$1
src=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

TESSERA_CONFIG_DIR="$src/configs" "$tessera" run --config tiny --kernel gemm --shape M=16,N=64,K=16 \
  --fidelity rtl --waves "$dir/gemm.fst" >/dev/null 2>"$dir/run.log"
export TESSERA_GTKW="$dir/gemm.gtkw" TESSERA_GTKW_REPORT="$dir/report.txt"
status=0
timeout 120 xvfb-run -a "$src/scripts/waves" "$dir/gemm.fst" --script="$here/gtkwave_check.tcl" \
  >"$dir/gtkwave.log" 2>&1 || status=$?
if [[ ! -f $TESSERA_GTKW_REPORT ]]; then
  echo "FAIL: GTKWave did not run the check script (exit $status):" >&2
  cat "$dir/gtkwave.log" >&2
  exit 1
fi
cat "$TESSERA_GTKW_REPORT"
read -r _ wanted _ shown < <(head -1 "$TESSERA_GTKW_REPORT")
if grep -q '^missing ' "$TESSERA_GTKW_REPORT"; then
  echo "FAIL: signals the save file names that GTKWave did not load" >&2
  exit 1
fi
if ((wanted < 40 || shown < wanted)); then
  echo "FAIL: the save file names $wanted signals and GTKWave shows $shown" >&2
  exit 1
fi
if grep -qi 'error' "$dir/gtkwave.log"; then
  echo "FAIL: GTKWave reported an error:" >&2
  cat "$dir/gtkwave.log" >&2
  exit 1
fi
echo "PASS: GTKWave loaded all $wanted signals of the save file"
