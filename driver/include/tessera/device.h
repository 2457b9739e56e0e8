// Device: a NeuronCore-class core opened on a config and a fidelity. Tensors
// live in its HBM; run() loads a Program and simulates it.
//
// SystemC runs one simulation per process, so a Device runs one program;
// `tessera run` and the regression runner start a process per run.
#pragma once

#include "arch/config.h"
#include "tessera/program.h"
#include "tessera/run_report.h"
#include "tessera/tensor.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

struct DeviceOptions {
  std::string config = "tiny";           // a config name or YAML file
  std::vector<arch::Override> overrides;  // --set path=value
  std::optional<arch::Fidelity> fidelity; // default: the config's
  bool no_data = false;                   // timing only: skip the arithmetic and data movement
  // A waveform of the run for GTKWave (docs/waves.md): FILE.fst and FILE.gtkw;
  // empty: none. The window and scope use the --waves-window and
  // --waves-scope syntax; empty: the whole run, everything.
  std::string waves;
  std::string waves_window;
  std::string waves_scope;
  // Where the sampled fidelity writes the waveform of a disagreement.
  std::string failure_waves_dir = ".";
  bool trace = false;                     // record a timeline of the run (trace())
  // The cores of the chip a run uses (docs/multicore.md). 0: one logical
  // core: with chip.lnc 1, one core with its own share of HBM (the config's
  // hbm: section), as a single-core run always was; with chip.lnc 2, the
  // logical core's two cores, as N = 2. N >= 1: N cores of the chip (at
  // most chip.cores), all sharing the chip's whole HBM, one program each
  // (launch).
  int cores = 0;
};

class Device {
public:
  explicit Device(const DeviceOptions& options);
  ~Device();

  const arch::ResolvedConfig& resolved() const { return resolved_; }
  // The config a core runs with: the resolved config's, addressing the
  // whole chip's HBM (arch::core_on_chip) when the device is on a chip.
  const arch::HwConfig& config() const { return hw_; }
  arch::Fidelity fidelity() const { return fidelity_; }
  bool no_data() const { return options_.no_data; }

  // A row-major tensor in HBM. Throws KernelError when HBM is full.
  Tensor allocate(const std::string& name, std::vector<std::int64_t> shape, DType dtype);
  // Host values in, rounded to the tensor's dtype (bf16: round to nearest
  // even; fp8: nearest even, saturating, docs/formats.md). An x4 (MX) tensor
  // takes four values per element, each an element's own value before its
  // block's scale; uint8 takes the codes 0..255 (MX scales).
  void upload(const Tensor& t, const std::vector<float>& values);
  // The tensor's values, as upload takes them.
  std::vector<float> download(const Tensor& t) const;

  RunReport run(const Program& program);
  // Several cores (DeviceOptions::cores): builds one program per instance
  // of a grid of `grid` instances, which must be the device's cores, and
  // runs them together, instance i on core i. Every tensor is visible to
  // every core at the same address. Throws KernelError on a grid that does
  // not match the cores.
  RunReport launch(const std::function<Program(const Spmd&)>& build, int grid);
  // The same with the programs built: programs[i] runs on core i.
  RunReport run(const std::vector<Program>& programs);
  // The cores a run uses: DeviceOptions::cores, or 1 for a single core.
  int cores() const { return std::max(1, options_.cores); }
  // Whether the device is (part of) a chip: DeviceOptions::cores >= 1.
  bool on_chip() const { return options_.cores > 0; }
  // Whether the run is one logical core of several physical ones: no core
  // count was given and the config's chip.lnc is above 1.
  bool logical_core() const { return logical_core_; }
  // Every statistic of the last run, one line each (the stats.txt format).
  const std::string& stats_text() const { return stats_text_; }
  // The save file written beside DeviceOptions::waves by the last run, or empty.
  const std::string& waves_save_file() const { return waves_gtkw_; }
  // The last run's timeline in the Chrome trace-event format (Perfetto,
  // chrome://tracing), when DeviceOptions::trace asked for one; else null.
  const nlohmann::json& trace() const { return trace_; }

private:
  RunReport run_single(const Program& program);
  RunReport run_chip(const std::vector<Program>& programs);

  bool logical_core_ = false;  // set before options_.cores is filled in from chip.lnc
  DeviceOptions options_;
  arch::ResolvedConfig resolved_;
  arch::HwConfig hw_;
  arch::Fidelity fidelity_;
  std::uint64_t hbm_next_ = 0;
  std::map<std::uint64_t, std::vector<std::uint8_t>> data_;  // tensor address -> bytes
  bool ran_ = false;
  std::string stats_text_;
  std::string waves_gtkw_;
  nlohmann::json trace_;
};

}  // namespace tessera
