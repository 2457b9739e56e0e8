#include "commands.h"
#include "files.h"
#include "kernel_command.h"
#include "job_runner.h"
#include "process.h"
#include "profile_page.h"

#include "arch/config_format.h"
#include "common/kernel.h"
#include "tessera/device.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>

#include <unistd.h>

namespace tessera::cli {
namespace {

struct RunOptions {
  std::string config, kernel, variant, shape, dtype, fidelity, out, trace, html;
  std::vector<std::string> params;
  std::string waves, waves_window, waves_scope;
  std::vector<std::string> sets;
  bool no_data = false, json = false;
  std::string seed = "1";
  int cores = 0;  // 0: one core with its own share of HBM
  std::string shard;
  bool no_baseline = false;
  std::size_t retune = 0;  // timed runs of the search before the run; 0: no search
  int retune_jobs = 1;
};

// The same run on one core of the same chip, timing only (timing does not
// depend on data), in a child process (SystemC runs one simulation per
// process): the baseline of a multi-core run's speed-up. Its time in ns,
// or an error naming why it failed.
double one_core_time_ns(const RunOptions& o) {
  std::vector<std::string> argv = {runner::self_exe(), "run", "--config", o.config, "--kernel", o.kernel, "--cores", "1",
                                   "--no-data", "--json", "--seed", o.seed};
  for (const auto& [value, option] : {std::pair{&o.variant, "--variant"}, std::pair{&o.shape, "--shape"},
                                      std::pair{&o.fidelity, "--fidelity"}, std::pair{&o.shard, "--shard"}})
    if (!value->empty()) argv.insert(argv.end(), {option, *value});
  for (const auto& p : o.params) argv.insert(argv.end(), {"--param", p});
  for (const auto& s : o.sets) argv.insert(argv.end(), {"--set", s});
  std::string out, err;
  const int status = run_program(argv, &out, &err);
  if (status != 0)
    throw std::runtime_error(fmt::format("the one-core baseline run failed (exit {}): {}", status, err));
  return nlohmann::json::parse(out).at("time_ns").get<double>();
}

// --retune: the run's variant's tunable parameters searched on the run's own
// config (its --set overrides included) and shape, by `tessera tune` in a
// child process (SystemC runs one simulation per process, and a search runs
// many), into `dir`; --param holds a parameter. Returns the search's
// results.json, whose "best" the run then runs at.
nlohmann::json retune(const RunOptions& o, const std::string& variant, const std::filesystem::path& dir) {
  std::vector<std::string> argv = {runner::self_exe(), "tune", "--config", o.config, "--kernel", o.kernel,
                                   "--variant", variant, "--budget", std::to_string(o.retune), "-j",
                                   std::to_string(o.retune_jobs), "--out", dir.string(), "--no-plots"};
  for (const auto& [value, option] : {std::pair{&o.shape, "--shape"}, std::pair{&o.dtype, "--dtype"}})
    if (!value->empty()) argv.insert(argv.end(), {option, *value});
  for (const auto& p : o.params) argv.insert(argv.end(), {"--param", p});
  for (const auto& s : o.sets) argv.insert(argv.end(), {"--set", s});
  std::string out, err;
  const int status = run_program(argv, &out, &err);
  const std::filesystem::path log = dir / "tune.log";
  write_file(log, out + err);
  const std::string first = err.substr(0, err.find('\n'));
  // Exit 2: the search refused what it was given, as the run would have.
  if (status == kExitBadInput) throw KernelError(fmt::format("--retune: {}", first));
  // Exit 1 with results: no point ran to the end (below).
  if ((status != 0 && status != 1) || !std::filesystem::exists(dir / "results.json"))
    throw std::runtime_error(fmt::format("--retune: the search failed (exit {}){}; its log: {}", status,
                                         first.empty() ? "" : ": " + first, log.string()));
  nlohmann::json results = nlohmann::json::parse(read_file(dir / "results.json"));
  if (results.contains("best")) return results;
  // Every point refused (the kernel does not fit this config at any
  // tiling): the kernel's own answer, as a run at one tiling gives it.
  if (results.value("timed", 0) == 0)
    for (const auto& p : results["points"])
      if (p.value("status", "") == "pruned")
        throw KernelError(fmt::format("--retune: no point of the search fits: {}", p.value("reason", "")));
  throw std::runtime_error(fmt::format("--retune: no point of the search ran; its log: {}", log.string()));
}

// A seed is a plain decimal integer that fits 64 bits: "-1", "2^64" or
// "1e23" would otherwise all wrap or round to the same data.
std::optional<std::uint64_t> parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The folders the outputs go to exist and the files can be created, before
// a simulation that may take long; throws FileError naming the file.
void check_outputs(const RunOptions& o) {
  namespace fs = std::filesystem;
  if (!o.out.empty()) {
    make_dirs(o.out);
    for (const char* f : {"report.json", "stats.txt", "config.resolved.yaml"}) check_writable(fs::path(o.out) / f);
  }
  for (const std::string* file : {&o.trace, &o.html})
    if (!file->empty()) prepare_output(*file);
}

int run(const RunOptions& o) {
  // Checked here rather than by the option parser, so that a mistyped option
  // is named first.
  for (const auto& [value, option] : {std::pair{&o.config, "--config"}, std::pair{&o.kernel, "--kernel"}})
    if (value->empty()) {
      std::cerr << fmt::format("tessera run: {} is required (tessera run --help)\n", option);
      return kExitBadInput;
    }
  const std::optional<std::uint64_t> seed = parse_seed(o.seed);
  if (!seed) {
    std::cerr << fmt::format("tessera run: --seed {}: expected a whole number from 0 to {}\n", o.seed,
                             std::numeric_limits<std::uint64_t>::max());
    return kExitBadInput;
  }
  kernels::KernelRequest request = checked_request(o.kernel, o.variant, o.shape, o.params, *seed);
  const kernels::KernelSpec& spec = kernels::kernel_named(o.kernel);
  request.dtype = kernels::check_dtype(spec, o.dtype);
  DeviceOptions dev_opts;
  dev_opts.config = o.config;
  dev_opts.no_data = o.no_data;
  dev_opts.waves = o.waves;
  dev_opts.waves_window = o.waves_window;
  dev_opts.waves_scope = o.waves_scope;
  if (o.waves.empty() && (!o.waves_window.empty() || !o.waves_scope.empty())) {
    std::cerr << "tessera run: --waves-window and --waves-scope need --waves FILE.fst\n";
    return kExitBadInput;
  }
  if (!o.out.empty()) dev_opts.failure_waves_dir = o.out;
  dev_opts.trace = !o.trace.empty() || !o.html.empty();
  for (const auto& s : o.sets) dev_opts.overrides.push_back(arch::parse_override(s));
  if (!o.fidelity.empty()) {
    dev_opts.fidelity = arch::parse_fidelity(o.fidelity);
    if (!dev_opts.fidelity) {
      std::cerr << fmt::format("tessera run: --fidelity {}: expected rtl, sampled or tlm\n", o.fidelity);
      return kExitBadInput;
    }
  }
  if (o.cores < 0) {
    std::cerr << fmt::format("tessera run: --cores {}: expected 1 or more\n", o.cores);
    return kExitBadInput;
  }
  dev_opts.cores = o.cores;
  if (o.retune > 0 && o.cores > 0) {
    std::cerr << "tessera run: --retune searches one core's parameters; it does not take --cores\n";
    return kExitBadInput;
  }
  kernels::resolve_shard(spec, o.shard);
  check_outputs(o);
  nlohmann::json retuned;
  if (o.retune > 0) {
    // Without --out the search's folder is temporary.
    namespace fs = std::filesystem;
    const bool keep = !o.out.empty();
    const fs::path dir = keep ? fs::path(o.out) / "retune"
                              : fs::temp_directory_path() / fmt::format("tessera-retune-{}", ::getpid());
    make_dirs(dir);
    const std::string variant = spec.variant(o.variant).name;
    try {
      retuned = retune(o, variant, dir);
    } catch (...) {
      if (!keep) fs::remove_all(dir);
      throw;
    }
    if (!keep) fs::remove_all(dir);
    request.variant = variant;
    request.params = retuned["best"]["params"].get<std::map<std::string, std::string>>();
    kernels::check_params(spec, variant, request.params);
  }
  Device dev(dev_opts);
  // Without --cores a run is one logical core: several cores under chip.lnc 2.
  if (!o.shard.empty() && !dev.on_chip()) {
    std::cerr << "tessera run: --shard needs --cores N (or a logical core of several, chip.lnc 2)\n";
    return kExitBadInput;
  }
  RunReport report = kernels::run_kernel(dev, request, o.shard);
  if (dev.cores() > 1 && report.ok && !o.no_baseline) report.set_baseline(one_core_time_ns(o));

  // The report says which data it ran on.
  nlohmann::json extra = nlohmann::json::object();
  extra["seed"] = *seed;
  extra["dtype"] = request.dtype;
  if (!retuned.is_null())
    extra["retune"] = {{"budget", o.retune},
                       {"strategy", retuned["strategy"]},
                       {"space_size", retuned["space_size"]},
                       {"timed", retuned["timed"]},
                       {"pruned", retuned["pruned"]},
                       {"params", request.params}};
  const std::string json = report.json_text(extra);
  if (!o.out.empty()) {
    write_file(std::filesystem::path(o.out) / "report.json", json + "\n");
    write_file(std::filesystem::path(o.out) / "stats.txt", dev.stats_text());
    write_file(std::filesystem::path(o.out) / "config.resolved.yaml", arch::to_annotated_yaml(dev.resolved()));
  }
  if (!o.trace.empty()) write_file(o.trace, dev.trace().dump() + "\n");
  if (!o.html.empty()) {
    std::string shape_text;
    for (const auto& [k, v] : request.shape)
      shape_text += fmt::format("{}{}={}", shape_text.empty() ? "" : ",", k, v);
    const std::string variant = o.variant.empty() ? std::string("default") : o.variant;
    const std::string title = fmt::format("{} {} on {} ({}) {}", o.kernel, variant, report.config, report.fidelity,
                                          shape_text);
    write_page(o.html, run_page(title, nlohmann::json::parse(json), dev.trace()));
  }
  if (o.json) std::cout << json << '\n';
  else std::cout << report.summary();
  if (!o.waves.empty())
    std::cerr << fmt::format("tessera run: waveform {} (save file {}); open it with: scripts/waves {}\n", o.waves,
                             dev.waves_save_file(), o.waves);
  const bool passed = report.ok && (!report.checked || report.correct);
  if (!passed && !o.json) std::cerr << "tessera run: " << report.error << '\n';
  return passed ? 0 : 1;
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run one kernel on one config and report its performance");
  cmd->add_option("--config", o->config, "Config name or YAML file (required)");
  cmd->add_option("--kernel", o->kernel, "Kernel name, tessera list kernels (required)");
  cmd->add_option("--variant", o->variant, "Kernel variant (default: the kernel's first)");
  cmd->add_option("--shape", o->shape, "Shape parameters, e.g. M=512,N=1024,K=256 (default: the kernel's)");
  cmd->add_option("--param", o->params,
                  "Tunable parameters, e.g. bm=4,bk=8 (repeatable; default: the kernel's; tessera list kernels)");
  cmd->add_option("--dtype", o->dtype,
                  "Input dtype: bf16, fp32, fp8_e4m3, fp8_e5m2, mxfp8, mxfp4 where the kernel takes it (default: the "
                  "kernel's first; tessera list kernels; docs/formats.md)");
  cmd->add_option("--fidelity", o->fidelity, "rtl, sampled or tlm (default: the config's)");
  cmd->add_flag("--no-data", o->no_data, "Timing only: skip the arithmetic (same cycles)");
  cmd->add_option("--cores", o->cores,
                  "Run on N cores of the chip, sharing its HBM, the kernel split across them (at most chip.cores; "
                  "docs/multicore.md); also times it on one core of the chip for the speed-up. Default: one "
                  "logical core (chip.lnc cores)");
  cmd->add_option("--shard", o->shard, "With --cores: the dimension the kernel splits (default: its first; "
                                       "tessera list kernels --details)");
  cmd->add_flag("--no-baseline", o->no_baseline, "With --cores: skip the one-core run (no speed-up in the report)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (0 to 2^64-1)")->capture_default_str();
  cmd->add_option("--out", o->out, "Write report.json, stats.txt and config.resolved.yaml here");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->add_option("--trace", o->trace,
                  "Write a timeline of every engine and DMA queue here (Chrome trace-event JSON: Perfetto, chrome://tracing)");
  cmd->add_option("--html", o->html,
                  "Write the profile page here: one HTML file that opens with no network (timeline, time by call "
                  "site and label, stalls, roofline; docs/profiling.md)");
  cmd->add_option("--set", o->sets, "Override a config key: path.to.key=value (repeatable)");
  cmd->add_option("--retune", o->retune,
                  "First search the variant's tunable parameters on this config and shape (tessera tune: timing-only "
                  "tlm runs, at most N timed) and run at the best point; --param holds a parameter")
      ->check(CLI::Range(std::size_t{0}, std::size_t{100000}));
  cmd->add_option("--retune-jobs", o->retune_jobs, "With --retune: search runs at a time")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--waves", o->waves, "Write an FST waveform of the run here, and a GTKWave save file beside it "
                                       "(docs/waves.md)");
  cmd->add_option("--waves-window", o->waves_window,
                  "Only this time window: FROM:TO in ns, with units (2us:4us) or in cycles of a clock "
                  "(tensor@100:400)");
  cmd->add_option("--waves-scope", o->waves_scope,
                  "What to trace: tlm, tensor[:DEPTH], dma[:DEPTH], dmaN[:DEPTH], comma-separated "
                  "(default: all of it)");
  cmd->callback([o, exit_code] { *exit_code = run_reporting_errors("tessera run", [&] { return run(*o); }); });
}

}  // namespace tessera::cli
