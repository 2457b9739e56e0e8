// tessera compare: one kernel across configs, as a flow of the shared runner.
#include "commands.h"
#include "compare.h"
#include "files.h"
#include "profile_page.h"
#include "runner.h"
#include "slurm.h"

#include "arch/config.h"
#include "tessera/kernel_builder.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using runner::Job;
using runner::JobResult;
using runner::Status;

const char* kCompare = "tessera compare";

struct CompareOptions {
  compare::Request request;
  std::string out, html;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool json = false, no_plots = false;
};

// scripts/plot-study of this source tree, unless TESSERA_PLOT_SCRIPT names another.
std::string plot_script() {
  if (const char* s = std::getenv("TESSERA_PLOT_SCRIPT")) return s;
  return std::string(TESSERA_SOURCE_DIR) + "/scripts/plot-study";
}

bool answered(Status s) { return s == Status::Pass || s == Status::Infeasible; }

class ConfigReporter : public runner::Reporter {
public:
  explicit ConfigReporter(std::size_t total) : total_(total) {}
  // On stderr: stdout holds the table (or the JSON).
  void job_done(const JobResult& r) override {
    fmt::print(stderr, "[{}/{}] {} {} ({:.1f} s)\n", ++done_, total_,
               r.status == Status::Error ? "infeasible" : to_string(r.status), r.job.id, r.wall_seconds);
  }
  void tick(const std::string&) override {}
  void finish() override {}

private:
  std::size_t total_, done_ = 0;
};

nlohmann::json plan_of(const CompareOptions& o) {
  const compare::Request& r = o.request;
  return {{"kernel", r.kernel},     {"variant", r.variant},   {"shape", r.shape},
          {"configs", r.configs},   {"sets", r.sets},         {"fidelity", r.fidelity},
          {"no_data", r.no_data},   {"seed", r.seed},         {"timeout_s", r.timeout_s},
          {"no_plots", o.no_plots}, {"json", o.json},       {"html", o.html}};
}

compare::Request request_of(const nlohmann::json& plan) {
  compare::Request r;
  r.kernel = plan.at("kernel");
  r.variant = plan.value("variant", "");
  r.shape = plan.value("shape", "");
  r.configs = plan.at("configs").get<std::vector<std::string>>();
  r.sets = plan.value("sets", std::vector<std::string>());
  r.fidelity = plan.value("fidelity", "");
  r.no_data = plan.value("no_data", false);
  r.seed = plan.value("seed", std::uint64_t{1});
  r.timeout_s = plan.value("timeout_s", 1800.0);
  return r;
}

// A comparison as a flow of the shared runner: its jobs are the study's
// points (one per config), its outputs the study's results.csv/json and
// plots plus the comparison's own table (compare.csv). A comparison is a
// handful of runs, so it is run here (-j), not submitted to Slurm; the flow
// still describes its shards as any flow does.
class CompareFlow : public runner::Flow {
public:
  explicit CompareFlow(const sweep::Study& study) : study_(study), points_(sweep::expand(study)) {}

  std::string name() const override { return "compare"; }
  std::string noun() const override { return "config"; }
  std::string slurm_name(const nlohmann::json& plan) const override {
    return "tessera-compare-" + plan.at("kernel").get<std::string>();
  }
  std::vector<std::string> outputs() const override { return {"results.csv", "results.json", "compare.csv", "plots"}; }
  std::vector<Job> jobs(const nlohmann::json&) const override {
    std::vector<Job> jobs;
    for (const auto& p : points_) jobs.push_back(p.job);
    return jobs;
  }
  std::vector<std::string> shard_args(const nlohmann::json& plan) const override {
    const compare::Request r = request_of(plan);
    std::vector<std::string> args = {"--kernel", r.kernel, "--configs", fmt::format("{}", fmt::join(r.configs, ","))};
    if (!r.variant.empty()) args.insert(args.end(), {"--variant", r.variant});
    if (!r.shape.empty()) args.insert(args.end(), {"--shape", r.shape});
    if (!r.fidelity.empty()) args.insert(args.end(), {"--fidelity", r.fidelity});
    for (const auto& s : r.sets) args.insert(args.end(), {"--set", s});
    if (r.no_data) args.push_back("--no-data");
    args.insert(args.end(), {"--seed", std::to_string(r.seed), "--no-plots"});
    return args;
  }
  std::vector<JobResult> read_results(const fs::path& dir, const std::vector<Job>& jobs) const override {
    std::vector<JobResult> results;
    const nlohmann::json all = nlohmann::json::parse(read_file(dir / "results.json"));
    for (const auto& row : all.at("points")) {
      const auto j = std::find_if(jobs.begin(), jobs.end(), [&](const Job& x) { return x.id == row.at("id"); });
      if (j == jobs.end()) continue;
      JobResult r;
      r.job = *j;
      const auto status = runner::parse_status(row.at("status"));
      if (!status) throw std::runtime_error(fmt::format("{}: unknown status {}", (dir / "results.json").string(), row.at("status").dump()));
      r.status = *status;
      r.message = row.value("message", "");
      r.wall_seconds = row.value("wall_seconds", 0.0);
      r.report = row.value("report", nlohmann::json::object());
      results.push_back(std::move(r));
    }
    return results;
  }
  int write_outputs(const nlohmann::json& plan, const std::vector<JobResult>& results,
                    const fs::path& out) const override {
    const std::vector<compare::Row> rows = compare::rows(points_, results);
    nlohmann::json all = sweep::results_json(study_, points_, results);
    all["compare"] = compare::json(rows);
    write_file(out / "results.csv", sweep::results_csv(study_, points_, results));
    write_file(out / "results.json", all.dump(2) + "\n");
    write_file(out / "compare.csv", compare::csv(rows));
    if (const std::string html = plan.value("html", ""); !html.empty()) {
      // Each config's report beside its row, for the page's call-site tables.
      nlohmann::json reports = nlohmann::json::array();
      for (const auto& p : points_) {
        const auto r = std::find_if(results.begin(), results.end(), [&](const JobResult& x) { return x.job.id == p.job.id; });
        reports.push_back(r == results.end() ? nlohmann::json() : r->report);
      }
      const compare::Request req = request_of(plan);
      const std::string title = fmt::format("{} {} on {}{}{}", req.kernel, req.variant.empty() ? rows.front().variant : req.variant,
                                            fmt::join(req.configs, ", "), req.shape.empty() ? "" : " ", req.shape);
      write_page(html, compare_page(title, compare::json(rows), reports));
      std::cerr << fmt::format("{}: profile page {}\n", kCompare, html);
    }
    if (plan.value("json", false)) std::cout << compare::json(rows).dump(2) << '\n';
    else std::cout << compare::table(study_, rows);
    int status = 0;
    for (const auto& r : results)
      if (!answered(r.status)) {
        std::cerr << fmt::format("{}: {} on {}: {}\n", kCompare, to_string(r.status), r.job.config, r.message);
        status = 1;
      }
    std::cerr << fmt::format("{}: {}, {} and {}\n", kCompare, (out / "compare.csv").string(),
                             (out / "results.csv").string(), (out / "results.json").string());
    if (!plan.value("no_plots", false)) {
      const std::string cmd = fmt::format("{} {} --out {} >&2", slurm::shell_quote(plot_script()),
                                          slurm::shell_quote((out / "results.json").string()),
                                          slurm::shell_quote((out / "plots").string()));
      std::fflush(stdout);
      if (std::system(cmd.c_str()) != 0) {
        std::cerr << fmt::format("{}: plotting failed ({}); the results are written\n", kCompare, cmd);
        status = 1;
      }
    }
    return status;
  }
  void print_merged(const nlohmann::json&, const std::vector<JobResult>& results, const fs::path&) const override {
    std::cout << compare::table(study_, compare::rows(points_, results));
  }
  std::unique_ptr<runner::Reporter> reporter(std::size_t total) const override {
    return std::make_unique<ConfigReporter>(total);
  }
  bool answered(Status s) const override { return tessera::cli::answered(s); }

private:
  sweep::Study study_;
  std::vector<sweep::Point> points_;
};

int run_compare(const CompareOptions& o) {
  const sweep::Study study = compare::study_of(o.request);
  const CompareFlow flow(study);
  const nlohmann::json plan = plan_of(o);
  const fs::path out = o.out.empty() ? fs::path("out") / "compare" / o.request.kernel : fs::path(o.out);
  make_dirs(out);
  for (const auto& f : flow.outputs()) fs::remove_all(out / f);
  bool interrupted = false;
  std::vector<JobResult> results = runner::run_here(flow, flow.jobs(plan), o.jobs, out, &interrupted);
  // Every config was checked before anything ran, so a run refused as bad
  // input is a kernel that does not fit that config: an answer, as in a sweep.
  for (auto& r : results)
    if (r.status == Status::Error) r.status = Status::Infeasible;
  const int status = flow.write_outputs(plan, results, out);
  return interrupted ? runner::interrupted_exit(flow) : status;
}

}  // namespace

void add_compare_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<CompareOptions>();
  compare::Request& r = o->request;
  CLI::App* cmd = app.add_subcommand("compare", "Run one kernel on several configs and compare them side by side");
  cmd->add_option("--kernel", r.kernel, "Kernel name (tessera list kernels)")->required();
  cmd->add_option("--configs", r.configs,
                  "Configs to compare, comma-separated: names (v1 for neuroncore-v1), YAML files, each with "
                  "+key=value overrides (neuroncore-v2+hbm.bandwidth_gbps=820); the first is the speed-up's baseline")
      ->required()
      ->delimiter(',');
  cmd->add_option("--variant", r.variant, "Kernel variant (default: the kernel's first)");
  cmd->add_option("--shape", r.shape, "Shape parameters, e.g. M=512,N=1024,K=256 (default: the kernel's)");
  cmd->add_option("--set", r.sets, "Override a config key on every config: path.to.key=value (repeatable)");
  cmd->add_option("--fidelity", r.fidelity, "rtl, sampled or tlm (default: each config's)");
  cmd->add_flag("--no-data", r.no_data, "Timing only: skip the arithmetic (same cycles)");
  cmd->add_option("--seed", r.seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--timeout", r.timeout_s, "Seconds each run may take")->capture_default_str();
  cmd->add_option("-j,--jobs", o->jobs, "Runs at a time (default: the core count)");
  cmd->add_option("--out", o->out, "Output folder (default: out/compare/<kernel>)");
  cmd->add_flag("--json", o->json, "Print the comparison as JSON instead of the table");
  cmd->add_flag("--no-plots", o->no_plots, "Write the tables only (no scripts/plot-study)");
  cmd->add_option("--html", o->html, "Also write the comparison as a profile page here (one HTML file, no network)");
  cmd->callback([o, exit_code] {
    try {
      *exit_code = run_compare(*o);
    } catch (const sweep::StudyError& e) {
      std::cerr << kCompare << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const KernelError& e) {
      std::cerr << kCompare << ": " << e.what() << '\n';
      *exit_code = kExitBadInput;
    } catch (const arch::ConfigError& e) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
