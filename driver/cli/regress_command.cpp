#include "files.h"
#include "profile_page.h"
#include "commands.h"
#include "regress.h"
#include "job_runner.h"
#include "runner.h"
#include "slurm.h"

#include "arch/config.h"
#include "arch/config_input.h"
#include "common/kernel.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>  // isatty

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using regress::Job;
using regress::JobResult;
using runner::Status;

struct RegressOptions {
  std::string suite, group, filter, shard, out = "out/regress", baseline, html;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool update_baseline = false, list = false;
  slurm::SubmitOptions submit;
};

const char* kRegress = "tessera regress";

// Problems a suite file can only show against the registry and the config
// library: unknown kernels, variants, shape parameters, dtypes, configs,
// fidelities, core counts beyond a chip, shard dimensions.
// Each names the suite file and the test's line.
std::vector<std::string> validate(const regress::Suite& suite) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> config_problem;  // config name -> problem ("" when fine)
  std::map<std::string, std::int64_t> chip_cores;       // config name -> chip.cores
  std::set<std::string> reported;
  const auto report = [&](const Job& j, const std::string& message) {
    const std::string e = fmt::format("{}:{}: test '{}': {}", j.file, j.line, j.test, message);
    if (reported.insert(e).second) errors.push_back(e);
  };
  for (const Job& j : suite.jobs) {
    const kernels::KernelSpec* spec = kernels::find_kernel(j.kernel);
    if (!spec) {
      std::string names;
      for (const auto& k : kernels::registry()) names += (names.empty() ? "" : ", ") + k.name;
      report(j, fmt::format("unknown kernel '{}' (kernels: {})", j.kernel, names));
      continue;
    }
    try {
      kernels::check_params(*spec, j.variant, j.params);  // the variant too
    } catch (const KernelError& e) {
      report(j, e.what());
    }
    try {
      kernels::resolve_shape(*spec, j.shape);
    } catch (const KernelError& e) {
      report(j, e.what());
    }
    if (!j.dtype.empty()) {
      try {
        kernels::check_dtype(*spec, spec->variant(j.variant).name, j.dtype);
      } catch (const KernelError& e) {
        report(j, e.what());
      }
    }
    if (!j.fidelity.empty() && !arch::parse_fidelity(j.fidelity))
      report(j, fmt::format("fidelity '{}': expected rtl, sampled or tlm", j.fidelity));
    if (j.cores > 1 && spec->shard_dims.empty())
      report(j, fmt::format("cores: {}: kernel '{}' runs on one core only (it declares no shard dimensions)", j.cores,
                            j.kernel));
    if (!j.shard.empty()) {
      try {
        kernels::resolve_shard(*spec, j.shard);
      } catch (const KernelError& e) {
        report(j, e.what());
      }
    }
    if (!config_problem.count(j.config)) {
      try {
        chip_cores[j.config] = arch::load_config(j.config).hw.chip.cores;
        config_problem[j.config] = "";
      } catch (const arch::ConfigError& e) {
        config_problem[j.config] = e.diagnostics().empty() ? e.what() : e.diagnostics().front().message;
      }
    }
    if (!config_problem[j.config].empty())
      report(j, fmt::format("config '{}': {}", j.config, config_problem[j.config]));
    else if (j.cores > chip_cores[j.config])
      report(j, fmt::format("cores: {}: config '{}' has {} cores per chip (chip.cores)", j.cores, j.config,
                            chip_cores[j.config]));
  }
  return errors;
}

std::vector<JobResult> read_results(const fs::path& file, std::string* suite) {
  std::vector<JobResult> results;
  for (const auto& j : nlohmann::json::parse(read_file(file))) results.push_back(runner::result_from_json(j, suite));
  return results;
}

// The live progress line on a terminal, a line per job otherwise.
class SuiteReporter : public runner::Reporter {
public:
  explicit SuiteReporter(std::size_t total) : progress_(stdout, total, isatty(fileno(stdout)) == 1) {}
  void job_done(const JobResult& r) override { progress_.job_done(r); }
  void tick(const std::string& note) override { progress_.tick(note); }
  void finish() override { progress_.finish(); }

private:
  regress::Progress progress_;
};

// A suite as a flow of the sharded runner. Its plan: the suite file and
// name, the selection (group, filter) and the baseline the shards compare with.
class SuiteFlow : public runner::Flow {
public:
  std::string name() const override { return "regress"; }
  std::string noun() const override { return "job"; }
  std::string slurm_name(const nlohmann::json& plan) const override {
    return "tessera-" + plan.at("suite_name").get<std::string>();
  }
  std::vector<std::string> outputs() const override { return {"results.json", "junit.xml", "summary.md"}; }
  std::vector<Job> jobs(const nlohmann::json& plan) const override {
    return regress::select(regress::load_suite(plan.at("suite")), plan.value("group", ""), plan.value("filter", ""),
                           1, 1);
  }
  std::vector<std::string> shard_args(const nlohmann::json& plan) const override {
    std::vector<std::string> args = {plan.at("suite")};
    for (const char* option : {"group", "filter", "baseline"})
      if (!plan.value(option, "").empty()) args.insert(args.end(), {fmt::format("--{}", option), plan[option]});
    return args;
  }
  std::vector<JobResult> read_results(const fs::path& dir, const std::vector<Job>&) const override {
    std::string suite;
    return tessera::cli::read_results(dir / "results.json", &suite);
  }
  // results.json, junit.xml and summary.md; the terminal gets the summary
  // without its row per job.
  int write_outputs(const nlohmann::json& plan, const std::vector<JobResult>& unsorted,
                    const fs::path& out) const override {
    std::vector<JobResult> results = unsorted;
    regress::check_agreement(results);
    std::sort(results.begin(), results.end(),
              [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
    const std::string suite = plan.value("suite_name", "");
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : results) all.push_back(runner::to_json(r, suite));
    write_file(out / "results.json", all.dump(2) + "\n");
    write_file(out / "junit.xml", regress::junit_xml(suite, results));
    write_file(out / "summary.md", regress::summary_markdown(suite, results));
    if (const std::string html = plan.value("html", ""); !html.empty()) {
      // The baseline's times beside this run's (none when it has no file).
      nlohmann::json baseline;
      const fs::path file = plan.value("baseline_file", "");
      if (!file.empty() && fs::exists(file)) {
        try {
          baseline = nlohmann::json::parse(read_file(file));
        } catch (const std::exception& e) {
          std::cerr << fmt::format("{}: {}: not a baseline, the page shows none: {}\n", kRegress, file.string(),
                                   arch::quote_input(e.what(), 200));
        }
      }
      write_page(html, regress_page(fmt::format("suite {}", suite), regress::against_baseline(results, baseline)));
      std::cerr << fmt::format("{}: page {}\n", kRegress, html);
    }
    std::cout << '\n' << regress::summary_markdown(suite, results, false);
    return all_passed(results) ? 0 : 1;
  }
  void print_merged(const nlohmann::json& plan, const std::vector<JobResult>& results,
                    const fs::path& out) const override {
    std::cout << '\n' << regress::summary_markdown(plan.value("suite_name", ""), results, false);
    fmt::print("results in {}\n", out.string());
  }
  std::unique_ptr<runner::Reporter> reporter(std::size_t total) const override {
    return std::make_unique<SuiteReporter>(total);
  }

  static bool all_passed(const std::vector<JobResult>& results) {
    return std::all_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == Status::Pass; });
  }
};

// The baseline a run compares with: --baseline, or the suite's own beside it.
fs::path baseline_path(const regress::Suite& suite, const RegressOptions& o) {
  return o.baseline.empty() ? fs::path(o.suite).parent_path() / "baselines" / (suite.name + ".json")
                            : fs::path(o.baseline);
}

nlohmann::json suite_plan(const regress::Suite& suite, const RegressOptions& o) {
  return {{"suite", fs::absolute(o.suite).lexically_normal().string()},
          {"suite_name", suite.name},
          {"group", o.group},
          {"filter", o.filter},
          {"baseline", o.baseline.empty() ? "" : fs::absolute(o.baseline).string()},
          // The page's baseline: the one the jobs were compared with.
          {"baseline_file", fs::absolute(baseline_path(suite, o)).string()},
          {"html", o.html.empty() ? "" : fs::absolute(o.html).lexically_normal().string()}};
}

int run_suite(const RegressOptions& o) {
  if (!o.submit.rerun_failed.empty()) return runner::rerun_failed(SuiteFlow(), o.submit);
  if (o.suite.empty()) {
    std::cerr << fmt::format("{}: a suite file is required (or: tessera regress merge DIR...)\n", kRegress);
    return kExitBadInput;
  }
  const regress::Suite suite = regress::load_suite(o.suite);
  const std::vector<std::string> errors = validate(suite);
  for (const auto& e : errors) std::cerr << e << '\n';
  if (!errors.empty()) return kExitBadInput;
  const bool slurm = o.submit.enabled || !o.submit.emit_sbatch.empty();
  int index = 1, count = 1;
  if (!runner::shard_option(SuiteFlow(), "suite", o.shard, slurm, &index, &count)) return kExitBadInput;
  if (o.update_baseline && (slurm || count > 1)) {
    std::cerr << fmt::format("{}: --update-baseline rewrites the whole suite's baseline: run it without --shard "
                             "and --slurm\n", kRegress);
    return kExitBadInput;
  }
  const auto jobs = regress::select(suite, o.group, o.filter, index, count);
  if (jobs.empty()) {
    std::cerr << fmt::format("{}: no job of {} matches (group '{}', filter '{}')\n", kRegress, o.suite, o.group,
                             o.filter);
    return kExitBadInput;
  }
  if (o.list) {
    for (const Job& j : jobs) fmt::print("{}  ({})\n", j.id, j.fidelity.empty() ? "config's fidelity" : j.fidelity);
    fmt::print("{}: {} jobs\n", suite.name, jobs.size());
    return 0;
  }
  const SuiteFlow flow;
  if (slurm) return runner::submit(flow, suite_plan(suite, o), jobs.size(), o.out, o.submit);

  // Everything the run will read or write is checked before the jobs run.
  const fs::path baseline = baseline_path(suite, o);
  nlohmann::json baseline_times;
  if (o.update_baseline) {
    make_dirs(baseline.parent_path().empty() ? fs::path(".") : baseline.parent_path());
    check_writable(baseline);
  } else if (fs::exists(baseline) || !o.baseline.empty()) {
    try {
      baseline_times = nlohmann::json::parse(read_file(baseline));
      if (!baseline_times.is_object()) throw std::runtime_error("expected an object {job id: {time_ns, cycles}}");
    } catch (const FileError& e) {
      std::cerr << fmt::format("{}: --baseline {}\n", kRegress, e.what());
      return kExitBadInput;
    } catch (const std::exception& e) {
      std::cerr << fmt::format("{}: {}: not a baseline: {}\n", kRegress, baseline.string(),
                               arch::quote_input(e.what(), 200));
      return kExitBadInput;
    }
  }
  make_dirs(o.out);
  for (const auto& f : flow.outputs()) {
    fs::remove(fs::path(o.out) / f);
    check_writable(fs::path(o.out) / f);
  }
  fmt::print("{}: {} jobs, {} at a time\n", suite.name, jobs.size(), o.jobs);
  std::fflush(stdout);
  bool interrupted = false;
  std::vector<JobResult> results = runner::run_here(flow, jobs, o.jobs, o.out, &interrupted);

  if (o.update_baseline && !interrupted) {
    write_file(baseline, regress::make_baseline(results).dump(2) + "\n");
    fmt::print("baseline written: {}\n", baseline.string());
  } else if (!baseline_times.is_null()) {
    regress::compare_to_baseline(results, baseline_times);
  }

  const int status = flow.write_outputs(suite_plan(suite, o), results, o.out);
  return interrupted ? runner::interrupted_exit(flow) : status;
}

// Combines the outputs of shards (--shard I/N runs) into one result set, as
// an unsharded run would have written it.
int merge(const std::vector<std::string>& dirs, const std::string& out) {
  std::vector<JobResult> results;
  std::set<std::string> ids;
  std::string suite;
  for (const auto& dir : dirs) {
    const fs::path file = fs::path(dir) / "results.json";
    if (!fs::exists(file)) {
      std::cerr << fmt::format("tessera regress merge: {} has no results.json\n", dir);
      return kExitBadInput;
    }
    for (JobResult& r : read_results(file, &suite)) {
      if (!ids.insert(r.job.id).second) {
        std::cerr << fmt::format("tessera regress merge: job {} appears in two shards\n", r.job.id);
        return kExitBadInput;
      }
      results.push_back(std::move(r));
    }
  }
  fs::create_directories(out);
  return SuiteFlow().write_outputs({{"suite_name", suite}}, results, out);
}

}  // namespace

void add_regress_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RegressOptions>();
  CLI::App* cmd = app.add_subcommand("regress", "Run a regression suite, one process per job, here or on Slurm");
  cmd->add_option("suite", o->suite, "Suite file (regressions/*.yaml)");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto merge_out = std::make_shared<std::string>("out/regress");
  auto plan = std::make_shared<std::string>();
  CLI::App* merge_cmd = cmd->add_subcommand("merge", "Combine the output folders of shards into one result set");
  merge_cmd->add_option("dirs", *dirs, "Shard output folders");
  merge_cmd->add_option("--out", *merge_out, "Output folder")->capture_default_str();
  merge_cmd->add_option("--plan", *plan, "Merge the shards of a --slurm run in this folder (its merge job runs this)");
  merge_cmd->callback([dirs, merge_out, plan, exit_code] {
    try {
      if (!plan->empty()) {
        *exit_code = runner::merge_plan(SuiteFlow(), *plan);
      } else if (dirs->empty()) {
        std::cerr << "tessera regress merge: give shard folders, or --plan DIR\n";
        *exit_code = kExitBadInput;
      } else {
        *exit_code = merge(*dirs, *merge_out);
      }
    } catch (const std::exception& e) {
      std::cerr << "tessera regress merge: " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
  cmd->add_option("--group", o->group, "Only jobs of this group (smoke, nightly, rtl, ...)");
  cmd->add_option("-j,--jobs", o->jobs, "Jobs at a time (default: the core count)")
      ->check(CLI::Range(1, runner::kMaxParallel));
  cmd->add_option("--shard", o->shard, "Run the deterministic shard I of N (I/N)");
  cmd->add_option("--filter", o->filter, "Only jobs whose id matches this glob");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--baseline", o->baseline, "Baseline file (default: regressions/baselines/<suite>.json)");
  cmd->add_flag("--update-baseline", o->update_baseline, "Write this run's times as the baseline");
  cmd->add_option("--html", o->html, "Also write the results against the baseline as a page here (one HTML file, no network)");
  cmd->add_flag("--list", o->list, "Check the suite (names, configs, shapes) and list its jobs without running them");
  slurm::add_submit_options(*cmd, o->submit,
                            {"suite", "job", "Follow the jobs with a progress line; exit with the suite's status"});
  cmd->callback([o, exit_code, cmd] {
    if (cmd->got_subcommand("merge")) return;
    try {
      *exit_code = run_suite(*o);
    } catch (const regress::SuiteError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const slurm::SlurmError& e) {
      std::cerr << kRegress << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const FileError& e) {
      std::cerr << kRegress << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
