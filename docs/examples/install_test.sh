#!/usr/bin/env bash
# Installs this build into a scratch prefix and builds docs/examples/kernel-project
# against it, as a separate project would (find_package(Tessera)); then runs
# its program, and its plugin through the installed `tessera` (list, run,
# regress). Nothing may point back into the build tree.
# With PYTHON (an interpreter with numpy), the installed Python package too:
# import tessera, and a Python kernel through the installed `tessera`.
#   install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [PYTHON]
set -euo pipefail
build=$1 source=$2 work=$3 python=${4:-}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
example=$source/docs/examples/kernel-project
# The installed tree must find its own configs.
unset TESSERA_CONFIG_DIR TESSERA_PLUGINS

step() { echo; echo "== $*"; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
echo "$(wc -l < "$work/install.log") files installed"

step "the installed binary and libraries do not reach into the build tree"
if ldd "$prefix/bin/tessera" "$prefix"/lib/*.so | grep -F "$build/lib/"; then echo "FAIL: tessera links the build tree"; exit 1; fi
"$prefix/bin/tessera" list configs | head -3

step "configure and build the example project against the install"
cmake -S "$example" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$work/configure.log"
cmake --build "$work/example"

step "the example program"
"$work/example/axpy_demo" small

plugin=$work/example/libaxpy_plugin.so
step "the plugin in the installed tessera: list, run, regress"
"$prefix/bin/tessera" list kernels --plugin "$plugin" | grep -E "^(kernel|axpy) "
"$prefix/bin/tessera" run --plugin "$plugin" --config small --kernel axpy --variant scalar --fidelity tlm --param F=128
"$prefix/bin/tessera" regress "$example/axpy-suite.yaml" --plugin "$plugin" -j 2 --out "$work/regress" | tail -4

if [[ -n $python ]]; then
  step "the Python package from the install"
  PYTHONPATH=$prefix/lib/python3/dist-packages "$python" -c "
import tessera, sys
assert tessera.__file__.startswith('$prefix'), tessera.__file__
r = tessera.run('gemm', config='small', shape={'M': 64, 'N': 256, 'K': 64}, fidelity='tlm')
print(f\"import tessera from {tessera.__file__}: gemm on small {r['time_ns'] / 1000:.2f} us, correct {r['correct']}\")
sys.exit(0 if r['correct'] else 1)"
  "$prefix/bin/tessera" run --plugin "$source/docs/examples/python/first_kernel.py" --config small --kernel scaled_relu \
    --fidelity tlm | grep -E "^scaled_relu|numerics"
fi
echo
echo "install test: passed"
