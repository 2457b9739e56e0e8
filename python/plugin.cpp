// libtessera_python_plugin.so: what `tessera --plugin kernels.py` loads to
// run a Python file. It starts an interpreter inside the `tessera` process
// (once), puts the tessera package on sys.path, and runs the file, whose
// kernels register through tessera.register_kernel into the registry the
// binary already holds (the Python module links the same shared library).
//
// Why a plugin rather than Python inside the binary: `tessera` stays free of
// libpython for everyone who never writes a Python kernel, and Python
// kernels come in through the one plugin mechanism C++ plugins use, so
// run, regress and sweep (whose jobs inherit TESSERA_PLUGINS) need nothing
// of their own.
#include <pybind11/embed.h>

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

// The tessera package beside this library: <build>/python in the build tree
// (this library is <build>/lib), <prefix>/lib/python3/dist-packages
// installed (this library in <prefix>/lib or <prefix>/lib/<multiarch>).
std::vector<std::string> package_dirs() {
  Dl_info info{};
  std::vector<std::string> dirs;
  if (dladdr(reinterpret_cast<void*>(&package_dirs), &info) && info.dli_fname) {
    const fs::path lib = fs::canonical(info.dli_fname).parent_path();
    for (const fs::path& d : {lib.parent_path() / "python", lib / "python3" / "dist-packages",
                              lib.parent_path() / "python3" / "dist-packages"})
      if (fs::is_regular_file(d / "tessera" / "__init__.py")) dirs.push_back(d.string());
  }
  return dirs;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int tessera_python_plugin_load(const char* path, std::string* error) {
  try {
    if (!Py_IsInitialized()) {
      // Never finalized: registered kernels hold Python objects until exit.
      py::initialize_interpreter();
      py::module_ sys = py::module_::import("sys");
      for (const auto& d : package_dirs()) sys.attr("path").attr("insert")(0, d);
    }
    py::gil_scoped_acquire gil;
    py::module_::import("tessera");
    py::module_::import("runpy").attr("run_path")(path, py::arg("run_name") = "__tessera_plugin__");
    return 0;
  } catch (const py::error_already_set& e) {
    *error = e.what();
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return 1;
}
