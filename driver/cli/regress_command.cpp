#include "commands.h"
#include "job_runner.h"
#include "regress.h"
#include "slurm.h"

#include "arch/config.h"
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

struct RegressOptions {
  std::string suite, group, filter, shard, out = "out/regress", baseline;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool update_baseline = false, list = false;
  slurm::SubmitOptions submit;
};

const char* kRegress = "tessera regress";

// Problems a suite file can only show against the registry and the config
// library: unknown kernels, variants, shape parameters, configs, fidelities.
// Each names the suite file and the test's line.
std::vector<std::string> validate(const regress::Suite& suite) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> config_problem;  // config name -> problem ("" when fine)
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
    if (!j.fidelity.empty() && !arch::parse_fidelity(j.fidelity))
      report(j, fmt::format("fidelity '{}': expected rtl, sampled or tlm", j.fidelity));
    if (!config_problem.count(j.config)) {
      try {
        arch::load_config(j.config);
        config_problem[j.config] = "";
      } catch (const arch::ConfigError& e) {
        config_problem[j.config] = e.diagnostics().empty() ? e.what() : e.diagnostics().front().message;
      }
    }
    if (!config_problem[j.config].empty())
      report(j, fmt::format("config '{}': {}", j.config, config_problem[j.config]));
  }
  return errors;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool stdout_is_terminal() { return isatty(fileno(stdout)) == 1; }

std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, const RegressOptions& o) {
  regress::Progress progress(stdout, jobs.size(), stdout_is_terminal());
  auto last_tick = std::chrono::steady_clock::now();
  auto results = regress::run_jobs(
      jobs, o.jobs, o.out, [&](const JobResult& r) { progress.job_done(r); },
      [&] {
        // The elapsed time on the live line moves while long jobs run.
        if (std::chrono::steady_clock::now() - last_tick < std::chrono::milliseconds(500)) return;
        progress.tick();
        last_tick = std::chrono::steady_clock::now();
      });
  progress.finish();
  return results;
}

const char* kOutputs[] = {"results.json", "junit.xml", "summary.md"};

// results.json, junit.xml and summary.md; true when every job passed. The
// terminal gets the summary without its row per job.
bool write_outputs(const std::string& suite, const std::vector<JobResult>& results, const std::string& out) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : results) all.push_back(regress::to_json(r, suite));
  std::ofstream(fs::path(out) / "results.json") << all.dump(2) << '\n';
  std::ofstream(fs::path(out) / "junit.xml") << regress::junit_xml(suite, results);
  std::ofstream(fs::path(out) / "summary.md") << regress::summary_markdown(suite, results);
  std::cout << '\n' << regress::summary_markdown(suite, results, false);
  return std::all_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == "pass"; });
}

void remove_outputs(const fs::path& out) {
  for (const char* f : kOutputs) fs::remove(out / f);
}

std::vector<JobResult> read_results(const fs::path& file, std::string* suite) {
  std::vector<JobResult> results;
  for (const auto& j : nlohmann::json::parse(read_file(file))) results.push_back(regress::result_from_json(j, suite));
  return results;
}

// ---- Slurm: the suite as a job array of shards plus a merge job ----------

slurm::ArrayJob array_job(const nlohmann::json& plan) {
  const fs::path out = plan.at("out").get<std::string>();
  const std::string tessera = slurm::shell_quote(plan.at("tessera"));
  const int shards = plan.at("shards");
  std::string select;
  if (!plan.value("group", "").empty()) select += " --group " + slurm::shell_quote(plan["group"]);
  if (!plan.value("filter", "").empty()) select += " --filter " + slurm::shell_quote(plan["filter"]);
  if (!plan.value("baseline", "").empty()) select += " --baseline " + slurm::shell_quote(plan["baseline"]);
  slurm::ArrayJob job;
  job.name = "tessera-" + plan.at("suite_name").get<std::string>();
  job.out = out;
  job.shards = shards;
  job.shard_command = fmt::format(
      "exec {} regress {} --shard \"$TESSERA_SHARD/{}\" -j \"$TESSERA_CPUS\"{} --out {}/\"$TESSERA_SHARD\"", tessera,
      slurm::shell_quote(plan.at("suite")), shards, select, slurm::shell_quote((out / "shards").string()));
  job.merge_command = fmt::format("exec {} regress merge --plan {}", tessera, slurm::shell_quote(out.string()));
  slurm::schedule(job, plan.at("scheduling"));
  // Jobs on the nodes read the same configs as this submission.
  job.env["TESSERA_CONFIG_DIR"] = arch::config_dir();
  return job;
}

// Shards whose task left no results, or results with a job that did not pass.
std::vector<int> failed_shards(const fs::path& out, int shards) {
  std::vector<int> failed;
  for (int i = 1; i <= shards; ++i) {
    const fs::path file = slurm::shard_dir(out, i) / "results.json";
    bool ok = fs::exists(file);
    if (ok) {
      std::string suite;
      for (const auto& r : read_results(file, &suite)) ok = ok && r.status == "pass";
    }
    if (!ok) failed.push_back(i);
  }
  return failed;
}

// Follows a submission with the local run's progress line (jobs counted as
// their result.json files appear in the shard folders), then reports shards
// that left no results and prints the merged summary. The suite's status.
int follow_suite(const fs::path& out, const nlohmann::json& plan, double start_timeout_s) {
  const int shards = plan.at("shards");
  const std::string array_id = plan.at("array_id"), merge_id = plan.at("merge_id");
  regress::Progress progress(stdout, plan.at("jobs").get<std::size_t>(), stdout_is_terminal());
  const slurm::States last_seen = slurm::follow_shards(
      out, shards, array_id, merge_id, start_timeout_s,
      [&](const fs::path& file) {
        try {
          progress.job_done(regress::result_from_json(nlohmann::json::parse(read_file(file))));
          return true;
        } catch (const nlohmann::json::exception&) {
          return false;  // still being written: read on the next poll
        }
      },
      [&](const std::string& note) { progress.tick("Slurm: " + note); });
  progress.finish();
  slurm::report_missing_shards(out, shards, array_id, last_seen);
  if (!fs::exists(out / "results.json")) {
    fmt::print("{}: the merge job {} wrote no results; its log {}:\n{}\n", kRegress, merge_id,
               (out / "slurm" / "merge.log").string(), slurm::tail(out / "slurm" / "merge.log"));
    return 1;
  }
  std::string suite;
  const auto results = read_results(out / "results.json", &suite);
  std::cout << '\n' << regress::summary_markdown(suite, results, false);
  fmt::print("results in {}\n", out.string());
  return std::all_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == "pass"; }) ? 0 : 1;
}

int submit_and_follow(const fs::path& out, nlohmann::json& plan, const RegressOptions& o, const std::string& what) {
  const slurm::ArrayJob job = array_job(plan);
  auto submitted = slurm::submit(job);
  plan["array_id"] = submitted.first;
  plan["merge_id"] = submitted.second;
  std::ofstream(slurm::plan_file(out)) << plan.dump(2) << '\n';
  fmt::print("{}: Slurm job array {} ({}), merge job {}; results in {}\n", kRegress, submitted.first, what,
             submitted.second, out.string());
  std::fflush(stdout);
  if (!o.submit.wait) {
    fmt::print("follow with: squeue -j {},{}\n", submitted.first, submitted.second);
    return 0;
  }
  return follow_suite(out, plan, o.submit.start_timeout_s);
}

int submit_suite(const regress::Suite& suite, const std::vector<Job>& jobs, const RegressOptions& o) {
  const fs::path out = fs::absolute(o.out).lexically_normal();
  const int shards = o.submit.shards > 0 ? std::min<int>(o.submit.shards, static_cast<int>(jobs.size()))
                                  : std::min<int>(32, static_cast<int>(jobs.size()));
  nlohmann::json plan = {{"suite", fs::absolute(o.suite).lexically_normal().string()},
                         {"suite_name", suite.name},
                         {"group", o.group},
                         {"filter", o.filter},
                         {"baseline", o.baseline.empty() ? "" : fs::absolute(o.baseline).string()},
                         {"shards", shards},
                         {"jobs", jobs.size()},
                         {"out", out.string()},
                         {"tessera", regress::self_exe()},
                         {"scheduling", slurm::scheduling(o.submit)}};
  // A fresh submission: nothing of an earlier one may be merged into it.
  fs::remove_all(out / "shards");
  fs::remove_all(out / "slurm");
  remove_outputs(out);
  fs::create_directories(out / "slurm");
  for (int i = 1; i <= shards; ++i) fs::create_directories(slurm::shard_dir(out, i));
  std::ofstream(slurm::plan_file(out)) << plan.dump(2) << '\n';
  if (!o.submit.emit_sbatch.empty()) {
    std::ofstream(o.submit.emit_sbatch) << slurm::submit_script(array_job(plan));
    fmt::print("{}: wrote {} ({} jobs in {} shards; {} is prepared for it); submit with: bash {}\n", kRegress,
               o.submit.emit_sbatch, jobs.size(), shards, out.string(), o.submit.emit_sbatch);
    return 0;
  }
  return submit_and_follow(out, plan, o, fmt::format("{} jobs in {} shards", jobs.size(), shards));
}

int rerun_failed(const RegressOptions& o) {
  const fs::path out = fs::absolute(o.submit.rerun_failed).lexically_normal();
  if (!fs::exists(slurm::plan_file(out))) {
    std::cerr << fmt::format("{}: --rerun-failed {}: no slurm/plan.json there; it takes the --out folder of a "
                             "--slurm run\n", kRegress, o.submit.rerun_failed);
    return kExitBadInput;
  }
  nlohmann::json plan = nlohmann::json::parse(read_file(slurm::plan_file(out)));
  slurm::reschedule(plan["scheduling"], o.submit);
  const std::vector<int> failed = failed_shards(out, plan.at("shards"));
  if (failed.empty()) {
    fmt::print("{}: every shard of {} passed; nothing to rerun\n", kRegress, out.string());
    return 0;
  }
  for (int i : failed) {
    fs::remove_all(slurm::shard_dir(out, i));
    fs::create_directories(slurm::shard_dir(out, i));
  }
  remove_outputs(out);
  slurm::ArrayJob job = array_job(plan);
  job.only = failed;
  if (!o.submit.emit_sbatch.empty()) {
    std::ofstream(o.submit.emit_sbatch) << slurm::submit_script(job);
    fmt::print("{}: wrote {} (shards {})\n", kRegress, o.submit.emit_sbatch, fmt::join(failed, ", "));
    return 0;
  }
  const auto submitted = slurm::submit(job);
  plan["array_id"] = submitted.first;
  plan["merge_id"] = submitted.second;
  std::ofstream(slurm::plan_file(out)) << plan.dump(2) << '\n';
  fmt::print("{}: shards {} of {} resubmitted as Slurm job array {}, merge job {}\n", kRegress,
             fmt::join(failed, ", "), plan.at("shards").get<int>(), submitted.first, submitted.second);
  std::fflush(stdout);
  if (!o.submit.wait) return 0;
  return follow_suite(out, plan, o.submit.start_timeout_s);
}

int run_suite(const RegressOptions& o) {
  if (!o.submit.rerun_failed.empty()) {
    if (!o.submit.enabled) {
      std::cerr << fmt::format("{}: --rerun-failed resubmits the failed shards of a --slurm run: add --slurm\n",
                               kRegress);
      return kExitBadInput;
    }
    return rerun_failed(o);
  }
  if (o.suite.empty()) {
    std::cerr << fmt::format("{}: a suite file is required (or: tessera regress merge DIR...)\n", kRegress);
    return kExitBadInput;
  }
  const regress::Suite suite = regress::load_suite(o.suite);
  const std::vector<std::string> errors = validate(suite);
  for (const auto& e : errors) std::cerr << e << '\n';
  if (!errors.empty()) return kExitBadInput;
  int index = 1, count = 1;
  if (!o.shard.empty() && !regress::parse_shard(o.shard, &index, &count)) {
    std::cerr << fmt::format("{}: --shard {}: expected I/N with 1 <= I <= N\n", kRegress, o.shard);
    return kExitBadInput;
  }
  const bool slurm = o.submit.enabled || !o.submit.emit_sbatch.empty();
  if (o.update_baseline && (slurm || count > 1)) {
    std::cerr << fmt::format("{}: --update-baseline rewrites the whole suite's baseline: run it without --shard "
                             "and --slurm\n", kRegress);
    return kExitBadInput;
  }
  if (slurm && !o.shard.empty()) {
    std::cerr << fmt::format("{}: --slurm shards the suite itself (--shards N); --shard is for one shard\n", kRegress);
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
  if (slurm) return submit_suite(suite, jobs, o);

  fs::create_directories(o.out);
  remove_outputs(o.out);
  fmt::print("{}: {} jobs, {} at a time\n", suite.name, jobs.size(), o.jobs);
  std::fflush(stdout);
  std::vector<JobResult> results = run_jobs(jobs, o);

  const fs::path baseline = o.baseline.empty()
                                ? fs::path(o.suite).parent_path() / "baselines" / (suite.name + ".json")
                                : fs::path(o.baseline);
  if (o.update_baseline) {
    fs::create_directories(baseline.parent_path());
    std::ofstream(baseline) << regress::make_baseline(results).dump(2) << '\n';
    fmt::print("baseline written: {}\n", baseline.string());
  } else if (fs::exists(baseline)) {
    regress::compare_to_baseline(results, nlohmann::json::parse(read_file(baseline)));
  }

  return write_outputs(suite.name, results, o.out) ? 0 : 1;
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
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  fs::create_directories(out);
  return write_outputs(suite, results, out) ? 0 : 1;
}

// The merge job of a Slurm submission: every shard's results, and for a shard
// whose task left none (failed, cancelled, never ran) its jobs as "missing"
// with the task's state and log, so the result set stays complete.
int merge_plan(const std::string& dir) {
  const fs::path out = fs::absolute(dir).lexically_normal();
  if (!fs::exists(slurm::plan_file(out))) {
    std::cerr << fmt::format("tessera regress merge: --plan {}: no slurm/plan.json there\n", dir);
    return kExitBadInput;
  }
  const nlohmann::json plan = nlohmann::json::parse(read_file(slurm::plan_file(out)));
  const regress::Suite suite = regress::load_suite(plan.at("suite"));
  const int shards = plan.at("shards");
  std::map<std::string, std::pair<std::string, std::string>> states;
  if (plan.contains("array_id")) {
    try {
      states = slurm::job_states(plan["array_id"], plan["merge_id"]);
    } catch (const slurm::SlurmError&) {
      // Without squeue the message names the log only.
    }
  }
  std::vector<JobResult> results;
  for (int i = 1; i <= shards; ++i) {
    const fs::path shard = slurm::shard_dir(out, i);
    if (fs::exists(shard / "results.json")) {
      std::string name;
      for (JobResult& r : read_results(shard / "results.json", &name)) results.push_back(std::move(r));
      continue;
    }
    const auto st = states.find(std::to_string(i));
    const std::string state = st == states.end() ? "" : " (Slurm: " + st->second.first + ")";
    for (const Job& j : regress::select(suite, plan.value("group", ""), plan.value("filter", ""), i, shards)) {
      JobResult r;
      r.job = j;
      r.status = "missing";
      r.message = fmt::format("shard {}/{} wrote no results: its task failed, was cancelled or never ran{}; log {}\n{}",
                              i, shards, state, (shard / "slurm.log").string(), slurm::tail(shard / "slurm.log", 300));
      results.push_back(r);
    }
  }
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  return write_outputs(suite.name, results, out.string()) ? 0 : 1;
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
        *exit_code = merge_plan(*plan);
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
  cmd->add_option("-j,--jobs", o->jobs, "Jobs at a time (default: the core count)");
  cmd->add_option("--shard", o->shard, "Run the deterministic shard I of N (I/N)");
  cmd->add_option("--filter", o->filter, "Only jobs whose id matches this glob");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--baseline", o->baseline, "Baseline file (default: regressions/baselines/<suite>.json)");
  cmd->add_flag("--update-baseline", o->update_baseline, "Write this run's times as the baseline");
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
    }
  });
}

}  // namespace tessera::cli
