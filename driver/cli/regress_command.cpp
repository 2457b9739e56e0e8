#include "commands.h"
#include "regress.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using regress::Job;
using regress::JobResult;

struct RegressOptions {
  std::string suite, group, filter, shard, out = "out/regress", baseline;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool update_baseline = false;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The job as `tessera run` arguments.
std::vector<std::string> run_args(const Job& j, const fs::path& dir) {
  std::vector<std::string> a = {"run", "--config", j.config, "--kernel", j.kernel, "--out", dir.string(), "--json",
                                "--seed", std::to_string(j.seed)};
  if (!j.variant.empty()) a.insert(a.end(), {"--variant", j.variant});
  if (!j.fidelity.empty()) a.insert(a.end(), {"--fidelity", j.fidelity});
  if (!j.shape.empty()) {
    std::string s;
    for (const auto& [k, v] : j.shape) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
    a.insert(a.end(), {"--shape", s});
  }
  return a;
}

struct Running {
  Job job;
  pid_t pid;
  fs::path dir;
  std::chrono::steady_clock::time_point start;
};

pid_t spawn(const std::vector<std::string>& args, const fs::path& dir) {
  fs::create_directories(dir);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: its report on stdout, its log on stderr, in its own folder.
  const int out = open((dir / "stdout.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open((dir / "log.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(out, 1);
  dup2(err, 2);
  setpgid(0, 0);
  std::vector<char*> argv;
  static const std::string self = fs::read_symlink("/proc/self/exe").string();
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(self.c_str(), argv.data());
  _exit(127);
}

JobResult finish(const Running& r, int status, bool timed_out) {
  JobResult res;
  res.job = r.job;
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  const std::string log = read_file(r.dir / "log.txt");
  const auto tail = [&] {
    const std::size_t at = log.size() > 600 ? log.size() - 600 : 0;
    return log.substr(at);
  };
  try {
    res.report = nlohmann::json::parse(read_file(r.dir / "stdout.json"));
  } catch (const std::exception&) {
    res.report = nlohmann::json::object();
  }
  if (timed_out) {
    res.status = "timeout";
    res.message = fmt::format("killed after {:.0f} s (timeout_s {}); log tail: {}", res.wall_seconds,
                              r.job.timeout_s, tail());
  } else if (WIFSIGNALED(status)) {
    res.status = "crash";
    res.message = fmt::format("killed by signal {} ({}); log tail: {}", WTERMSIG(status), strsignal(WTERMSIG(status)),
                              tail());
  } else if (WEXITSTATUS(status) == 0) {
    res.status = "pass";
  } else {
    res.status = WEXITSTATUS(status) == 2 ? "error" : "fail";
    res.message = res.report.value("error", std::string());
    if (res.message.empty()) res.message = tail();
  }
  return res;
}

std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, const RegressOptions& o) {
  std::vector<JobResult> results;
  std::vector<Running> running;
  std::size_t next = 0, passed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < o.jobs) {
      const Job& j = jobs[next++];
      std::string dir_name = j.id;
      std::replace(dir_name.begin(), dir_name.end(), '/', '.');
      const fs::path dir = fs::path(o.out) / "jobs" / dir_name;
      running.push_back({j, spawn(run_args(j, dir), dir), dir, std::chrono::steady_clock::now()});
    }
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t done = waitpid(it->pid, &status, WNOHANG);
      const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->start).count();
      bool timed_out = false;
      if (done == 0 && age > it->job.timeout_s) {
        kill(-it->pid, SIGKILL);
        waitpid(it->pid, &status, 0);
        timed_out = true;
      } else if (done == 0) {
        ++it;
        continue;
      }
      results.push_back(finish(*it, status, timed_out));
      passed += results.back().status == "pass";
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print("[{}/{}] {} {} ({:.1f} s; {} passed, {} failed, {:.0f} s elapsed)\n", results.size(), jobs.size(),
                 results.back().status, results.back().job.id, results.back().wall_seconds, passed,
                 results.size() - passed, elapsed);
      std::fflush(stdout);
      it = running.erase(it);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  return results;
}

// results.json, junit.xml and summary.md; true when every job passed.
bool write_outputs(const std::string& suite, const std::vector<JobResult>& results, const std::string& out) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : results)
    all.push_back({{"suite", suite}, {"id", r.job.id}, {"test", r.job.test}, {"status", r.status},
                   {"message", r.message}, {"wall_seconds", r.wall_seconds}, {"report", r.report}});
  std::ofstream(fs::path(out) / "results.json") << all.dump(2) << '\n';
  std::ofstream(fs::path(out) / "junit.xml") << regress::junit_xml(suite, results);
  const std::string summary = regress::summary_markdown(suite, results);
  std::ofstream(fs::path(out) / "summary.md") << summary;
  std::cout << '\n' << summary;
  return std::all_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == "pass"; });
}

int run_suite(const RegressOptions& o) {
  const regress::Suite suite = regress::load_suite(o.suite);
  int index = 1, count = 1;
  if (!o.shard.empty() && (std::sscanf(o.shard.c_str(), "%d/%d", &index, &count) != 2 || count < 1 || index < 1 ||
                           index > count)) {
    std::cerr << fmt::format("tessera regress: --shard {}: expected I/N with 1 <= I <= N\n", o.shard);
    return kExitBadInput;
  }
  const auto jobs = regress::select(suite, o.group, o.filter, index, count);
  if (jobs.empty()) {
    std::cerr << fmt::format("tessera regress: no job of {} matches (group '{}', filter '{}')\n", o.suite, o.group,
                             o.filter);
    return kExitBadInput;
  }
  fs::create_directories(o.out);
  fmt::print("{}: {} jobs, {} at a time\n", suite.name, jobs.size(), o.jobs);
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
    for (const auto& j : nlohmann::json::parse(read_file(file))) {
      JobResult r;
      r.job.id = j.at("id");
      r.job.test = j.value("test", std::string());
      r.status = j.at("status");
      r.message = j.value("message", std::string());
      r.wall_seconds = j.value("wall_seconds", 0.0);
      r.report = j.value("report", nlohmann::json::object());
      if (!ids.insert(r.job.id).second) {
        std::cerr << fmt::format("tessera regress merge: job {} appears in two shards\n", r.job.id);
        return kExitBadInput;
      }
      suite = j.value("suite", suite);
      results.push_back(r);
    }
  }
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  fs::create_directories(out);
  return write_outputs(suite, results, out) ? 0 : 1;
}

}  // namespace

void add_regress_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RegressOptions>();
  CLI::App* cmd = app.add_subcommand("regress", "Run a regression suite, one process per job");
  cmd->add_option("suite", o->suite, "Suite file (regressions/*.yaml)");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto merge_out = std::make_shared<std::string>("out/regress");
  CLI::App* merge_cmd = cmd->add_subcommand("merge", "Combine the output folders of shards into one result set");
  merge_cmd->add_option("dirs", *dirs, "Shard output folders")->required();
  merge_cmd->add_option("--out", *merge_out, "Output folder")->capture_default_str();
  merge_cmd->callback([dirs, merge_out, exit_code] { *exit_code = merge(*dirs, *merge_out); });
  cmd->add_option("--group", o->group, "Only jobs of this group (smoke, nightly, rtl, ...)");
  cmd->add_option("-j,--jobs", o->jobs, "Jobs at a time (default: the core count)");
  cmd->add_option("--shard", o->shard, "Run the deterministic shard I of N (I/N)");
  cmd->add_option("--filter", o->filter, "Only jobs whose id matches this glob");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--baseline", o->baseline, "Baseline file (default: regressions/baselines/<suite>.json)");
  cmd->add_flag("--update-baseline", o->update_baseline, "Write this run's times as the baseline");
  cmd->callback([o, exit_code, cmd] {
    if (cmd->got_subcommand("merge")) return;
    if (o->suite.empty()) {
      std::cerr << "tessera regress: a suite file is required (or: tessera regress merge DIR...)\n";
      *exit_code = kExitBadInput;
      return;
    }
    try {
      *exit_code = run_suite(*o);
    } catch (const regress::SuiteError& e) {
      std::cerr << e.what() << '\n';
      *exit_code = kExitBadInput;
    }
  });
}

}  // namespace tessera::cli
