// tessera._tessera: the C++ driver API and kernel registry, bound for Python
// (pybind11). Every call goes to the C++ implementation: Python adds names,
// numpy arrays and exceptions, nothing else. The pure-Python layer on top
// (tessera/__init__.py) adds the Kernel base class, slicing sugar and
// process isolation.
//
// KernelBuilder calls are bound through lambdas that forward each argument,
// so that a defaulted parameter added to a C++ call (a call-site location,
// say) keeps compiling here, and is filled in in one place per call.
#include "arch/config_format.h"
#include "arch/numerics.h"
#include "common/bounds.h"
#include "common/kernel.h"
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>

namespace py = pybind11;
using namespace tessera;
using tessera::kernels::KernelArgs;
using tessera::kernels::KernelSpec;
using tessera::kernels::NumericsCheck;
using tessera::kernels::ParamValue;
using tessera::kernels::TunableParam;

// libsystemc.so is linked with BIND_NOW and refers to sc_main (its own
// main() calls it), so whatever loads it must define one. Python never runs
// SystemC's main; this one only satisfies the loader.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char**) { return 0; }

namespace {

// Where the Python code calling the builder is: the innermost Python frame
// (a bound C++ function makes none of its own), as a file relative to the
// sys.path entry it was imported from (tessera/library/gemm.py; a script's
// own folder is sys.path[0]) and a line. The builder keeps file names by
// pointer, so each is interned once for the life of the process.
SourceLocation caller() {
  PyFrameObject* frame = PyEval_GetFrame();
  if (!frame) return {};
  const int line = PyFrame_GetLineNumber(frame);
  const auto code = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyFrame_GetCode(frame)));
  const std::string raw = py::str(code.attr("co_filename"));
  static std::map<std::string, std::string> interned;
  auto it = interned.find(raw);
  if (it == interned.end()) {
    std::string shown = raw;
    std::size_t best = 0;
    for (const py::handle entry : py::module_::import("sys").attr("path")) {
      std::string dir = py::str(entry);
      if (dir.empty()) continue;
      if (dir.back() != '/') dir += '/';
      if (dir.size() > best && raw.size() > dir.size() && raw.compare(0, dir.size(), dir) == 0) {
        best = dir.size();
        shown = raw.substr(dir.size());
      }
    }
    it = interned.emplace(raw, shown).first;
  }
  return {it->second.c_str(), line > 0 ? static_cast<std::uint32_t>(line) : 0};
}

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& e : j) l.append(to_python(e));
      return std::move(l);
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return std::move(d);
    }
    default: return py::none();
  }
}

// A config's fields by schema path ({"sbuf": {"partitions": 128, ...}, ...}),
// with the derived figures: the same rendering `tessera config show --json` prints.
py::object config_dict(const arch::HwConfig& hw) {
  arch::ResolvedConfig rc;
  rc.hw = hw;
  rc.derived = arch::derive(hw);
  const nlohmann::json j = arch::to_json(rc);
  py::dict d = to_python(j.at("config"));
  d["derived"] = to_python(j.at("derived"));
  d["name"] = hw.name;
  return std::move(d);
}

py::dict params_dict(const kernels::Params& p) { return to_python(p.to_json()); }

std::map<std::string, std::string> param_text(const py::object& o) {
  std::map<std::string, std::string> out;
  if (o.is_none()) return out;
  if (py::isinstance<py::str>(o)) return kernels::parse_param_text(o.cast<std::string>());
  for (const auto& [k, v] : o.cast<py::dict>()) out[k.cast<std::string>()] = py::str(v).cast<std::string>();
  return out;
}

// Enum members named as the ISA names them (tessera.Alu.add, tessera.Act.exp),
// taken from the C++ to_string so the two never differ.
template <typename E>
void bind_enum(py::module_& m, const char* name, const char* doc) {
  py::enum_<E> e(m, name, doc);
  for (int i = 0; i < 256; ++i) {
    const std::string n = arch::to_string(static_cast<E>(i));
    if (n == "?") break;
    e.value(n.c_str(), static_cast<E>(i));
  }
  e.def("__str__", [](E v) { return std::string(arch::to_string(v)); });
}

std::vector<float> floats_for(const Tensor& t, const py::array& values) {
  if (t.dtype == DType::Bf16 && py::dtype::of<std::uint16_t>().is(values.dtype())) {
    // bf16 bit patterns (tessera.to_bf16): exact values, uploaded as they are.
    const auto bits = py::array_t<std::uint16_t, py::array::c_style | py::array::forcecast>::ensure(values);
    std::vector<float> out(static_cast<std::size_t>(bits.size()));
    const std::uint16_t* p = bits.data();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = arch::to_float(arch::Bf16::from_bits(p[i]));
    return out;
  }
  const auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!f) throw py::type_error(fmt::format("upload('{}'): expected a numeric array", t.name));
  return std::vector<float>(f.data(), f.data() + f.size());
}

py::array_t<float> shaped(const std::vector<float>& v, const std::vector<std::int64_t>& shape) {
  py::array_t<float> a(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (static_cast<std::size_t>(a.size()) == v.size()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(float));
  return a;
}

py::array_t<std::uint16_t> bf16_bits(const py::array_t<float, py::array::c_style | py::array::forcecast>& a) {
  py::array_t<std::uint16_t> out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  const float* in = a.data();
  std::uint16_t* o = out.mutable_data();
  for (py::ssize_t i = 0; i < a.size(); ++i) o[i] = arch::to_bf16(in[i]).bits;
  return out;
}

py::array_t<float> bf16_values(const py::array_t<std::uint16_t, py::array::c_style | py::array::forcecast>& a) {
  py::array_t<float> out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  const std::uint16_t* in = a.data();
  float* o = out.mutable_data();
  for (py::ssize_t i = 0; i < a.size(); ++i) o[i] = arch::to_float(arch::Bf16::from_bits(in[i]));
  return out;
}

DeviceOptions device_options(const std::string& config, const py::object& overrides, const std::optional<std::string>& fidelity,
                             bool no_data, bool trace, const std::string& waves, const std::string& waves_window,
                             const std::string& waves_scope, const std::string& failure_waves_dir, int cores = 0) {
  DeviceOptions o;
  o.cores = cores;
  o.config = config;
  if (!overrides.is_none()) {
    if (py::isinstance<py::dict>(overrides)) {
      for (const auto& [k, v] : overrides.cast<py::dict>())
        o.overrides.push_back(arch::parse_override(
            fmt::format("{}={}", k.cast<std::string>(),
                        py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "true" : "false") : py::str(v).cast<std::string>())));
    } else {
      for (const auto& s : overrides) o.overrides.push_back(arch::parse_override(s.cast<std::string>()));
    }
  }
  if (fidelity) {
    o.fidelity = arch::parse_fidelity(*fidelity);
    if (!o.fidelity) throw KernelError(fmt::format("fidelity {}: expected rtl, sampled or tlm", *fidelity));
  }
  o.no_data = no_data;
  o.trace = trace;
  o.waves = waves;
  o.waves_window = waves_window;
  o.waves_scope = waves_scope;
  o.failure_waves_dir = failure_waves_dir;
  return o;
}

// A kernel written in Python (tessera.Kernel), as the registry sees it. The
// Python object builds its program and checks its results; the GIL is
// taken for each call, as `tessera run` calls from C++.
class PythonInstance : public kernels::KernelInstance {
public:
  explicit PythonInstance(py::object kernel) : kernel_(std::move(kernel)) {}
  ~PythonInstance() override {
    py::gil_scoped_acquire gil;
    kernel_ = py::object();
  }
  Program build() override {
    py::gil_scoped_acquire gil;
    return kernel_.attr("_program")().cast<Program>();
  }
  NumericsCheck check() override {
    py::gil_scoped_acquire gil;
    return kernel_.attr("_check")().cast<NumericsCheck>();
  }

private:
  py::object kernel_;
};

}  // namespace

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera's C++ driver API and kernel registry (docs/python.md)";

  static py::exception<KernelError> kernel_error(m, "KernelError", PyExc_ValueError);
  static py::exception<arch::ConfigError> config_error(m, "ConfigError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const KernelError& e) {
      PyErr_SetString(kernel_error.ptr(), e.what());
    } catch (const arch::ConfigError& e) {
      PyErr_SetString(config_error.ptr(), e.what());
    }
  });

  bind_enum<arch::Engine>(m, "Engine", "The engines of a core (tensor, vector, scalar, gpsimd, sync)");
  bind_enum<DType>(m, "DType", "Element types");
  bind_enum<arch::Memory>(m, "Memory", "On-chip memories");
  bind_enum<arch::AluOp>(m, "Alu", "Vector-engine operations");
  bind_enum<arch::ActFunc>(m, "Act", "Scalar-engine activation functions");

  // --- Operands -------------------------------------------------------------------
  py::class_<Tensor>(m, "Tensor", "A row-major tensor in HBM (Device.allocate)")
      .def_readonly("name", &Tensor::name)
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape)); })
      .def_readonly("dtype", &Tensor::dtype)
      .def_readonly("address", &Tensor::address)
      .def_property_readonly("elements", &Tensor::elements)
      .def_property_readonly("bytes", &Tensor::bytes)
      .def("strides", &Tensor::strides)
      .def("region", [](const Tensor& t, std::int64_t row, std::int64_t col, std::int64_t rows,
                        std::int64_t cols) { return t.region(row, col, rows, cols); },
           py::arg("row"), py::arg("col"), py::arg("rows"), py::arg("cols"), py::keep_alive<0, 1>())
      .def("all", &Tensor::all, py::keep_alive<0, 1>())
      .def("__repr__", [](const Tensor& t) {
        return fmt::format("Tensor('{}', [{}], {})", t.name, fmt::join(t.shape, ", "), arch::to_string(t.dtype));
      });

  py::class_<View>(m, "View", "A window of an HBM tensor: offset, sizes and element strides, outermost first")
      .def(py::init([](const Tensor& t, std::int64_t offset, std::vector<std::int64_t> sizes,
                       std::vector<std::int64_t> strides) { return View{&t, offset, std::move(sizes), std::move(strides)}; }),
           py::arg("tensor"), py::arg("offset"), py::arg("sizes"), py::arg("strides"), py::keep_alive<1, 2>())
      .def_property_readonly("tensor", [](const View& v) { return v.tensor; }, py::return_value_policy::reference)
      .def_readonly("offset", &View::offset)
      .def_readonly("sizes", &View::sizes)
      .def_readonly("strides", &View::strides)
      .def_property_readonly("elements", &View::elements)
      .def("__repr__", [](const View& v) {
        return fmt::format("View('{}', offset {}, sizes [{}], strides [{}])", v.tensor ? v.tensor->name : "?",
                           v.offset, fmt::join(v.sizes, ", "), fmt::join(v.strides, ", "));
      });

  py::class_<Tile>(m, "Tile", "A rectangle of SBUF or PSUM (KernelBuilder.sbuf / psum)")
      .def_readonly("memory", &Tile::memory)
      .def_readonly("dtype", &Tile::dtype)
      .def_readonly("partition", &Tile::partition)
      .def_readonly("partitions", &Tile::partitions)
      .def_readonly("offset", &Tile::offset)
      .def_readonly("free", &Tile::free)
      .def_readonly("name", &Tile::name)
      .def_property_readonly("bytes_per_partition", &Tile::bytes_per_partition)
      .def("slice", [](const Tile& t, std::uint32_t p, std::uint32_t np, std::uint32_t f,
                       std::uint32_t nf) { return t.slice(p, np, f, nf); },
           py::arg("partition"), py::arg("partitions"), py::arg("free_offset"), py::arg("free"))
      .def("columns", [](const Tile& t, std::uint32_t f, std::uint32_t nf) { return t.columns(f, nf); })
      .def("rows", &Tile::rows, py::arg("free_offset"), py::arg("rows"), py::arg("columns"), py::arg("pitch"),
           py::arg("step") = 1,
           "rows rows of columns elements, row r from free_offset + r * pitch, elements step apart: one vector, "
           "scalar or GpSimd instruction walks them all")
      .def_property_readonly("is_rows", &Tile::is_rows)
      .def("__repr__", [](const Tile& t) {
        return fmt::format("Tile('{}', {} [{}+{}, {}+{}], {})", t.name, arch::to_string(t.memory), t.partition,
                           t.partitions, t.offset / std::max(1u, arch::size_of(t.dtype)), t.free,
                           arch::to_string(t.dtype));
      });

  // --- Program and report --------------------------------------------------------
  py::class_<Program>(m, "Program", "A built kernel: one instruction stream per engine and the DMA rings")
      .def_readonly("name", &Program::name)
      .def_readonly("matmul_flops", &Program::matmul_flops)
      .def_readwrite("model_flops", &Program::model_flops)
      .def_property_readonly("instruction_count", &Program::instruction_count)
      .def("disassemble", &Program::disassemble)
      .def("encode", [](const Program& p, arch::Engine e) {
        const auto b = p.encode(e);
        return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
      })
      .def_property_readonly("rings", [](const Program& p) {
        py::dict d;
        for (const auto& [q, ring] : p.rings) {
          py::list l;
          for (const auto& desc : ring) {
            const auto b = arch::pack(desc);
            l.append(py::bytes(reinterpret_cast<const char*>(b.data()), b.size()));
          }
          d[py::make_tuple(q.first, q.second)] = l;
        }
        return d;
      }, "Descriptors per DMA queue (engine, queue), each as its packed bytes")
      .def_property_readonly("labels", [](const Program& p) {
        std::vector<std::vector<std::string>> out(p.labels.size());
        for (std::size_t e = 0; e < p.labels.size(); ++e)
          for (std::size_t i = 0; i < p.labels[e].size(); ++i) out[e].push_back(p.label(static_cast<arch::Engine>(e), i));
        return out;
      })
      .def_property_readonly("ring_labels", [](const Program& p) {
        py::dict d;
        for (const auto& [q, l] : p.ring_labels) {
          std::vector<std::string> names;
          for (std::size_t i = 0; i < l.size(); ++i) names.push_back(p.label(q, i));
          d[py::make_tuple(q.first, q.second)] = names;
        }
        return d;
      });

  py::class_<RunReport>(m, "RunReport", "What a run tells a kernel author (docs/kernel-guide.md, Reading the report)")
      .def_readonly("kernel", &RunReport::kernel)
      .def_readonly("variant", &RunReport::variant)
      .def_readonly("config", &RunReport::config)
      .def_readonly("fidelity", &RunReport::fidelity)
      .def_readonly("shape", &RunReport::shape)
      .def_property_readonly("params", [](const RunReport& r) { return to_python(r.params); })
      .def_readonly("ok", &RunReport::ok)
      .def_readonly("error", &RunReport::error)
      .def_readonly("time_ns", &RunReport::time_ns)
      .def_readonly("cycles", &RunReport::cycles)
      .def_readonly("hfu_percent", &RunReport::hfu_percent)
      .def_readonly("mfu_percent", &RunReport::mfu_percent)
      .def_readonly("matmul_flops", &RunReport::matmul_flops)
      .def_readonly("dma_bytes", &RunReport::dma_bytes)
      .def_readonly("hbm_bytes", &RunReport::hbm_bytes)
      .def_readonly("hbm_bandwidth_gbps", &RunReport::hbm_bandwidth_gbps)
      .def_readonly("checked", &RunReport::checked)
      .def_readonly("correct", &RunReport::correct)
      .def_readonly("max_abs_error", &RunReport::max_abs_error)
      .def_readonly("tolerance", &RunReport::tolerance)
      .def_readonly("wall_seconds", &RunReport::wall_seconds)
      .def_readonly("build_seconds", &RunReport::build_seconds)
      .def_readonly("simulate_seconds", &RunReport::simulate_seconds)
      .def_readonly("analysis_seconds", &RunReport::analysis_seconds)
      .def_readonly("check_seconds", &RunReport::check_seconds)
      .def_readonly("check_threads", &RunReport::check_threads)
      .def("bound_by", &RunReport::bound_by)
      .def("summary", &RunReport::summary)
      .def("to_dict", [](const RunReport& r) { return to_python(r.to_json()); },
           "Every figure, as report.json holds them")
      .def("__getitem__", [](const RunReport& r, const std::string& key) {
        const std::optional<std::string> text = r.json_member(key);
        if (!text) throw py::key_error(key);
        return to_python(nlohmann::json::parse(*text));
      })
      .def("__str__", &RunReport::summary)
      .def("__repr__", [](const RunReport& r) {
        return fmt::format("<RunReport {} {} on {}: {:.3f} us>", r.kernel, r.variant, r.config, r.time_ns / 1000);
      });

  // --- Device ----------------------------------------------------------------------
  py::class_<Device>(m, "Device", "A core opened on a config and a fidelity; one run per process (SystemC)")
      .def(py::init([](const std::string& config, const py::object& overrides, const std::optional<std::string>& fidelity,
                       bool no_data, bool trace, const std::string& waves, const std::string& waves_window,
                       const std::string& waves_scope, const std::string& failure_waves_dir, int cores) {
             return std::make_unique<Device>(device_options(config, overrides, fidelity, no_data, trace, waves,
                                                            waves_window, waves_scope, failure_waves_dir, cores));
           }),
           py::arg("config") = "tiny", py::arg("overrides") = py::none(), py::arg("fidelity") = py::none(),
           py::arg("no_data") = false, py::arg("trace") = false, py::arg("waves") = "", py::arg("waves_window") = "",
           py::arg("waves_scope") = "", py::arg("failure_waves_dir") = ".", py::arg("cores") = 0)
      .def_property_readonly("cores", &Device::cores, "Cores a run uses (1 unless opened with cores=N)")
      .def_property_readonly("_config", [](const Device& d) { return config_dict(d.config()); })
      .def_property_readonly("resolved", [](const Device& d) { return to_python(arch::to_json(d.resolved())); })
      .def_property_readonly("fidelity", [](const Device& d) { return std::string(arch::to_string(d.fidelity())); })
      .def_property_readonly("no_data", &Device::no_data)
      .def("allocate", [](Device& d, const std::string& name, std::vector<std::int64_t> shape,
                          DType dtype) { return d.allocate(name, std::move(shape), dtype); },
           py::arg("name"), py::arg("shape"), py::arg("dtype"))
      .def("upload", [](Device& d, const Tensor& t, const py::array& values) { d.upload(t, floats_for(t, values)); },
           py::arg("tensor"), py::arg("values"),
           "Host values in, rounded to the tensor's dtype; a uint16 array into a bf16 tensor is taken as bf16 bits")
      .def("download", [](const Device& d, const Tensor& t) { return shaped(d.download(t), t.shape); },
           py::arg("tensor"), "The tensor's values as float32, in its shape")
      .def("run", [](Device& d, const Program& p) { return d.run(p); }, py::arg("program"))
      .def("launch",
           [](Device& d, const py::function& build, int grid) {
             return d.launch([&](const Spmd& s) { return build(s.instance, s.grid).cast<Program>(); }, grid);
           },
           py::arg("build"), py::arg("grid"),
           "Several cores (cores=N): build(instance, grid) makes instance's program, which runs on core instance; "
           "the grid must be the cores (docs/multicore.md)")
      .def_property_readonly("stats_text", &Device::stats_text)
      .def("trace", [](const Device& d) { return to_python(d.trace()); },
           "The last run's timeline (Chrome trace-event format) when opened with trace=True")
      .def_property_readonly("waves_save_file", &Device::waves_save_file);

  // --- KernelBuilder ------------------------------------------------------------------
  using KB = KernelBuilder;
  using arch::ActFunc;
  using arch::AluOp;
  py::class_<KB>(m, "KernelBuilder", "Where a kernel is written: one call per engine instruction (docs/kernel-guide.md)")
      .def(py::init([](const Device& dev, const std::string& name) { return std::make_unique<KB>(dev.config(), name); }),
           py::arg("device"), py::arg("name"), py::keep_alive<1, 2>())
      .def_property_readonly("_config", [](const KB& kb) { return config_dict(kb.config()); })
      .def("sbuf", [](KB& kb, const std::string& name, std::uint32_t p, std::uint32_t f, DType t) { return kb.sbuf(name, p, f, t); },
           py::arg("name"), py::arg("partitions"), py::arg("free"), py::arg("dtype"))
      .def("psum", [](KB& kb, const std::string& name, std::uint32_t p, std::uint32_t f, DType t) { return kb.psum(name, p, f, t); },
           py::arg("name"), py::arg("partitions"), py::arg("free"), py::arg("dtype") = DType::Fp32)
      .def("release", [](KB& kb, const Tile& t) { kb.release(t); }, py::arg("tile"))
      // HBM hazards are tracked by tensor: the builder keeps every view's tensor alive.
      .def("dma", [](KB& kb, const Tile& dst, const View& src) { kb.dma(dst, src, caller()); }, py::arg("dst"), py::arg("src"),
           py::keep_alive<1, 3>())
      .def("dma", [](KB& kb, const View& dst, const Tile& src) { kb.dma(dst, src, caller()); }, py::arg("dst"), py::arg("src"),
           py::keep_alive<1, 2>())
      .def("dma", [](KB& kb, const Tile& dst, const View& src, std::uint32_t pitch) { kb.dma(dst, src, pitch, caller()); },
           py::arg("dst"), py::arg("src"), py::arg("pitch"), py::keep_alive<1, 3>())
      .def("matmul", [](KB& kb, const Tile& psum, const Tile& stationary, const Tile& moving,
                        bool accumulate) { kb.matmul(psum, stationary, moving, accumulate, caller()); },
           py::arg("psum"), py::arg("stationary"), py::arg("moving"), py::arg("accumulate") = false)
      .def("transpose", [](KB& kb, const Tile& psum, const Tile& src) { kb.transpose(psum, src, caller()); }, py::arg("psum"),
           py::arg("src"))
      .def("tensor_tensor", [](KB& kb, const Tile& dst, const Tile& a, const Tile& b,
                               AluOp op) { kb.tensor_tensor(dst, a, b, op, caller()); },
           py::arg("dst"), py::arg("a"), py::arg("b"), py::arg("op"))
      // The three tensor_scalar forms: immediates; per-partition [P, 1] tiles
      // (s, and s2 or an immediate s2_value); an immediate s with a tile s2.
      .def("tensor_scalar", [](KB& kb, const Tile& dst, const Tile& a, AluOp op, float s, AluOp op2, float s2,
                               arch::Engine engine) { kb.tensor_scalar(dst, a, op, s, op2, s2, engine, caller()); },
           py::arg("dst"), py::arg("a"), py::arg("op"), py::arg("s"), py::arg("op2") = AluOp::Bypass, py::arg("s2") = 0.0f,
           py::arg("engine") = arch::Engine::Vector)
      .def("tensor_scalar", [](KB& kb, const Tile& dst, const Tile& a, AluOp op, const Tile& s, AluOp op2,
                               const Tile* s2, float s2_value,
                               arch::Engine engine) { kb.tensor_scalar(dst, a, op, s, op2, s2, s2_value, engine, caller()); },
           py::arg("dst"), py::arg("a"), py::arg("op"), py::arg("s"), py::arg("op2") = AluOp::Bypass,
           py::arg("s2") = nullptr, py::arg("s2_value") = 0.0f, py::arg("engine") = arch::Engine::Vector)
      .def("tensor_scalar", [](KB& kb, const Tile& dst, const Tile& a, AluOp op, float s, AluOp op2, const Tile& s2,
                               arch::Engine engine) { kb.tensor_scalar(dst, a, op, s, op2, s2, engine, caller()); },
           py::arg("dst"), py::arg("a"), py::arg("op"), py::arg("s"), py::arg("op2"), py::arg("s2"),
           py::arg("engine") = arch::Engine::Vector)
      .def("reduce", [](KB& kb, const Tile& dst, const Tile& a, AluOp op) { kb.reduce(dst, a, op, caller()); }, py::arg("dst"),
           py::arg("a"), py::arg("op"))
      .def("copy", [](KB& kb, const Tile& dst, const Tile& src, arch::Engine engine) { kb.copy(dst, src, engine, caller()); },
           py::arg("dst"), py::arg("src"), py::arg("engine") = arch::Engine::Vector)
      .def("memset", [](KB& kb, const Tile& dst, float value) { kb.memset(dst, value, caller()); }, py::arg("dst"), py::arg("value"))
      .def("select", [](KB& kb, const Tile& dst, const Tile& pred, const Tile& a, const Tile& b) { kb.select(dst, pred, a, b, caller()); },
           py::arg("dst"), py::arg("pred"), py::arg("a"), py::arg("b"))
      .def("activation", [](KB& kb, const Tile& dst, const Tile& src, ActFunc f, float scale, float bias,
                            const Tile* bias_tile, const Tile* accumulate) {
             kb.activation(dst, src, f, scale, bias, bias_tile, accumulate, caller());
           },
           py::arg("dst"), py::arg("src"), py::arg("func"), py::arg("scale") = 1.0f, py::arg("bias") = 0.0f,
           py::arg("bias_tile") = nullptr, py::arg("accumulate") = nullptr)
      .def("iota", [](KB& kb, const Tile& dst, float base, float partition_step, float free_step) {
             kb.iota(dst, base, partition_step, free_step, caller());
           },
           py::arg("dst"), py::arg("base"), py::arg("partition_step"), py::arg("free_step"))
      .def("partition_reduce", [](KB& kb, const Tile& dst, const Tile& src, AluOp op) { kb.partition_reduce(dst, src, op, caller()); },
           py::arg("dst"), py::arg("src"), py::arg("op"))
      .def("label", [](KB& kb, const std::string& text) { kb.label(text); }, py::arg("text"))
      .def("collective_label", [](KB& kb, const std::string& text) { kb.collective_label(text); }, py::arg("text"))
      .def("build", [](KB& kb) { return kb.build(); });

  // --- Numerics -----------------------------------------------------------------------
  m.def("to_bf16", &bf16_bits, py::arg("values"),
        "float32 values rounded to bf16 (round to nearest even), as their uint16 bit patterns");
  m.def("from_bf16", &bf16_values, py::arg("bits"), "bf16 bit patterns (uint16) as float32 values (exact)");
  m.def("gamma", [](std::int64_t n, double u) { return kernels::gamma(n, u); }, py::arg("n"), py::arg("u") = 0x1p-24,
        "gamma_n = n u / (1 - n u): the bound on n roundings (docs/kernels.md)");
  py::class_<NumericsCheck>(m, "NumericsCheck", "A kernel's outputs against its reference")
      .def(py::init<>())
      .def_readwrite("correct", &NumericsCheck::correct)
      .def_readwrite("max_abs_error", &NumericsCheck::max_abs_error)
      .def_readwrite("tolerance", &NumericsCheck::tolerance)
      .def_readwrite("detail", &NumericsCheck::detail)
      .def("__repr__", [](const NumericsCheck& c) {
        return fmt::format("<NumericsCheck {} max_abs_error {} tolerance {}{}>", c.correct ? "match" : "MISMATCH",
                           c.max_abs_error, c.tolerance, c.detail.empty() ? "" : ": " + c.detail);
      });
  m.def("check_within",
        [](const py::array_t<float, py::array::c_style | py::array::forcecast>& got,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& expect,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& bound,
           const std::function<std::string(std::size_t)>& where) {
          return kernels::check_within(std::vector<float>(got.data(), got.data() + got.size()),
                                       std::vector<double>(expect.data(), expect.data() + expect.size()),
                                       std::vector<double>(bound.data(), bound.data() + bound.size()), where);
        },
        py::arg("got"), py::arg("expect"), py::arg("bound"), py::arg("where"),
        "|got - expect| <= bound elementwise (the library kernels' check); `where(i)` names element i");

  // --- The registry ----------------------------------------------------------------------
  py::class_<kernels::Variant>(m, "Variant")
      .def_readonly("name", &kernels::Variant::name)
      .def_readonly("description", &kernels::Variant::description);
  py::class_<kernels::ShapeParam>(m, "ShapeParam")
      .def_readonly("name", &kernels::ShapeParam::name)
      .def_readonly("default", &kernels::ShapeParam::default_value)
      .def_readonly("description", &kernels::ShapeParam::description)
      .def_readonly("min", &kernels::ShapeParam::min_value);

  py::class_<kernels::ParamContext>(m, "ParamContext", "What a derived default may depend on")
      .def_property_readonly("_config", [](const kernels::ParamContext& c) { return config_dict(c.config); })
      .def_property_readonly("shape", [](const kernels::ParamContext& c) { return c.shape; })
      .def_property_readonly("variant", [](const kernels::ParamContext& c) { return c.variant; })
      .def_property_readonly("given", [](const kernels::ParamContext& c) { return params_dict(c.given); });

  py::class_<TunableParam>(m, "Param", "A tunable parameter: a choice that changes how fast, not what, a kernel computes")
      .def_static("integer", &TunableParam::integer, py::arg("name"), py::arg("min"), py::arg("max"), py::arg("default"),
                  py::arg("description"))
      .def_static("choice", &TunableParam::choice, py::arg("name"), py::arg("choices"), py::arg("default"),
                  py::arg("description"))
      .def("derived", [](const TunableParam& p, py::function f) {
             return p.derived([f](const kernels::ParamContext& ctx) -> ParamValue {
               py::gil_scoped_acquire gil;
               return f(py::cast(ctx, py::return_value_policy::reference)).cast<ParamValue>();
             });
           }, py::arg("function"), "The default derived from the config and shape: function(ctx) -> value")
      .def("useful_up_to", [](const TunableParam& p, py::function f) {
             return p.useful_up_to([f](const kernels::ParamContext& ctx) {
               py::gil_scoped_acquire gil;
               return f(py::cast(ctx, py::return_value_policy::reference)).cast<std::int64_t>();
             });
           }, py::arg("function"))
      .def("only_for", &TunableParam::only_for, py::arg("variants"))
      .def("changes_numerics", &TunableParam::changes_numerics,
           "Declares a choice of the result's rounding, not its speed: the tuner never searches it")
      .def_readonly("name", &TunableParam::name)
      .def_readonly("description", &TunableParam::description)
      .def_readonly("min", &TunableParam::min)
      .def_readonly("max", &TunableParam::max)
      .def_readonly("choices", &TunableParam::choices)
      .def_readonly("variants", &TunableParam::variants)
      .def_property_readonly("default", [](const TunableParam& p) { return p.default_text(); })
      .def_property_readonly("legal", &TunableParam::legal_text)
      .def("__repr__", [](const TunableParam& p) {
        return fmt::format("<Param {} default {} legal {}>", p.name, p.default_text(), p.legal_text());
      });

  py::class_<KernelSpec>(m, "KernelSpec", "A registered kernel")
      .def_readonly("name", &KernelSpec::name)
      .def_readonly("description", &KernelSpec::description)
      .def_readonly("variants", &KernelSpec::variants)
      .def_readonly("shape", &KernelSpec::shape)
      .def_readonly("params", &KernelSpec::params)
      .def_readonly("origin", &KernelSpec::origin)
      .def_readonly("dtypes", &KernelSpec::dtypes)
      .def_readonly("dtype_variants", &KernelSpec::dtype_variants)
      .def("variant_names", &KernelSpec::variant_names)
      .def("__repr__", [](const KernelSpec& s) { return fmt::format("<KernelSpec {}>", s.name); });

  py::class_<KernelArgs>(m, "KernelArgs", "What one instance is made for: variant, shape, params (resolved), seed")
      .def_readonly("variant", &KernelArgs::variant)
      .def_readonly("shape", &KernelArgs::shape)
      .def_property_readonly("params", [](const KernelArgs& a) { return params_dict(a.params); })
      .def_readonly("seed", &KernelArgs::seed)
      .def_readonly("dtype", &KernelArgs::dtype);

  py::class_<kernels::Instance>(m, "Instance", "A registered kernel set up on a device: build(), then check()")
      .def_property_readonly("args", [](const kernels::Instance& i) { return i.args; })
      .def("build", [](kernels::Instance& i) { return i.kernel->build(); })
      .def("check", [](kernels::Instance& i) { return i.kernel->check(); });

  // Copies: a registration may reorder the registry.
  m.def("kernels", [] { return kernels::registry(); }, "Every registered kernel, by name");
  m.def("kernel", [](const std::string& name) { return kernels::kernel_named(name); }, py::arg("name"));
  m.def("load_plugin", &kernels::load_plugin, py::arg("path"),
        "Loads kernels from a shared library or Python file, as tessera --plugin does");
  m.def("instantiate",
        [](Device& dev, const std::string& kernel, const std::string& variant, const kernels::Shape& shape,
           const py::object& params, std::uint64_t seed, const std::string& dtype) {
          return std::make_unique<kernels::Instance>(
              kernels::instantiate(dev, {kernel, variant, shape, param_text(params), seed, dtype}));
        },
        py::arg("device"), py::arg("kernel"), py::arg("variant") = "", py::arg("shape") = kernels::Shape{},
        py::arg("params") = py::none(), py::arg("seed") = 1, py::arg("dtype") = "", py::keep_alive<0, 1>(),
        "A registered kernel set up on a device (inputs allocated and uploaded)");
  m.def("run_kernel",
        [](Device& dev, const std::string& kernel, const std::string& variant, const kernels::Shape& shape,
           const py::object& params, std::uint64_t seed, const std::string& dtype) {
          return kernels::run_kernel(dev, {kernel, variant, shape, param_text(params), seed, dtype});
        },
        py::arg("device"), py::arg("kernel"), py::arg("variant") = "", py::arg("shape") = kernels::Shape{},
        py::arg("params") = py::none(), py::arg("seed") = 1, py::arg("dtype") = "",
        "Builds, runs and checks a registered kernel: what `tessera run` does");
  m.def("check_fits",
        [](const std::string& config, const std::string& kernel, const std::string& variant, const kernels::Shape& shape,
           const py::object& params, const py::object& overrides) {
          const DeviceOptions o = device_options(config, overrides, std::nullopt, true, false, "", "", "", ".");
          return kernels::check_fits(o, {kernel, variant, shape, param_text(params), 1});
        },
        py::arg("config"), py::arg("kernel"), py::arg("variant") = "", py::arg("shape") = kernels::Shape{},
        py::arg("params") = py::none(), py::arg("overrides") = py::none(),
        "None when the point can be built on the config, else the reason (no simulation)");
  m.def("resolve_params",
        [](const std::string& config, const std::string& kernel, const std::string& variant,
           const kernels::Shape& shape, const py::object& params) {
          const KernelSpec& spec = kernels::kernel_named(kernel);
          const arch::ResolvedConfig rc = arch::load_config(config);
          return params_dict(kernels::resolve_params(spec, variant, rc.hw, kernels::resolve_shape(spec, shape),
                                                     kernels::check_params(spec, variant, param_text(params))));
        },
        py::arg("config"), py::arg("kernel"), py::arg("variant") = "", py::arg("shape") = kernels::Shape{},
        py::arg("params") = py::none(), "Every parameter the variant reads, with its default for this config");

  // A Python kernel into the registry: `factory(device, args)` returns a
  // tessera.Kernel (see tessera/__init__.py, register_kernel).
  m.def("_register_python_kernel",
        [](const std::string& name, const std::string& description,
           const std::vector<std::pair<std::string, std::string>>& variants,
           const std::vector<std::tuple<std::string, std::int64_t, std::string, std::int64_t>>& shape,
           const std::vector<TunableParam>& params, py::function factory) {
          KernelSpec spec;
          spec.name = name;
          spec.description = description;
          for (const auto& [n, d] : variants) spec.variants.push_back({n, d});
          for (const auto& [n, v, d, min] : shape) spec.shape.push_back({n, v, d, min});
          spec.params = params;
          spec.make = [factory](Device& dev, const KernelArgs& args) -> std::unique_ptr<kernels::KernelInstance> {
            py::gil_scoped_acquire gil;
            py::object k = factory(py::cast(&dev, py::return_value_policy::reference), args);
            return std::make_unique<PythonInstance>(std::move(k));
          };
          kernels::register_kernel(std::move(spec));
          kernels::registry();  // raises here when the registration was refused
        });
}
