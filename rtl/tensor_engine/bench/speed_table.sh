#!/usr/bin/env bash
# Prints the tensor engine's speed table: for each array size, the time to
# Verilate and compile its model from nothing (ccache off, the build's job
# count) and the simulation speed of its benchmark program.
#
#   rtl/tensor_engine/bench/speed_table.sh [build-dir] [seconds-per-size]
#
# The build dir must be configured (cmake --preset default); 64x64 is included
# when it was configured with -DTESSERA_TE_BENCH_64=ON.
set -euo pipefail
build=${1:-build}
seconds=${2:-3}
sizes=$(cmake -L -N "$build" 2>/dev/null | grep -q 'TESSERA_TE_BENCH_64:BOOL=ON' &&
        echo "8x8 32x32 64x64 128x128" || echo "8x8 32x32 128x128")

echo "| array | simulated cycles/s | MAC/s | cycles per CPU-second | MACs per PE-cycle | Verilate + compile |"
echo "|---|---|---|---|---|---|"
for size in $sizes; do
  target=tensor_engine_$size
  ninja -C "$build" -t clean "$target" > /dev/null
  rm -f "$build"/rtl/tensor_engine/CMakeFiles/$target.dir/Vtensor_engine_$size.dir/*.cpp
  start=$(date +%s.%N)
  CCACHE_DISABLE=1 cmake --build "$build" --target "$target" > /dev/null
  end=$(date +%s.%N)
  cmake --build "$build" --target tensor_engine_bench_$size > /dev/null
  row=$("$build"/rtl/tensor_engine/bench/tensor_engine_bench_$size "$seconds")
  printf '%s %.0f s |\n' "$row" "$(echo "$end - $start" | bc)"
done
