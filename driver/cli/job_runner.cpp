#include "job_runner.h"

#include "slurm.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::cli::regress {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Running {
  Job job;
  pid_t pid;
  fs::path dir;
  std::chrono::steady_clock::time_point start;
};

pid_t spawn(const std::vector<std::string>& args, const fs::path& dir) {
  // A folder left by an earlier run would mix its results with this one's.
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The log opens with the command that reproduces the job.
  std::string command = self_exe();
  for (const auto& a : args)
    command += " " + (a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=,:+-") ==
                              std::string::npos
                          ? a
                          : slurm::shell_quote(a));
  std::ofstream(dir / "log.txt") << "$ " << command << '\n';
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: its report on stdout, its log on stderr, in its own folder.
  const int out = open((dir / "stdout.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open((dir / "log.txt").c_str(), O_WRONLY | O_APPEND, 0644);
  dup2(out, 1);
  dup2(err, 2);
  setpgid(0, 0);
  std::vector<char*> argv;
  const std::string& self = self_exe();
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
    res.message = fmt::format("killed after {:.0f} s (timeout_s {})\nlog tail:\n{}", res.wall_seconds,
                              r.job.timeout_s, tail());
  } else if (WIFSIGNALED(status)) {
    res.status = "crash";
    // The cause on the first line (failures are bucketed by it), the log after.
    res.message = fmt::format("killed by signal {} ({})\nlog tail:\n{}", WTERMSIG(status),
                              strsignal(WTERMSIG(status)), tail());
  } else if (WEXITSTATUS(status) == 0) {
    res.status = "pass";
  } else {
    res.status = WEXITSTATUS(status) == 2 ? "error" : "fail";
    res.message = res.report.value("error", std::string());
    if (res.message.empty()) res.message = fmt::format("exit status {}\nlog tail:\n{}", WEXITSTATUS(status), tail());
  }
  return res;
}

}  // namespace

const std::string& self_exe() {
  static const std::string self = fs::read_symlink("/proc/self/exe").string();
  return self;
}

std::vector<std::string> run_args(const Job& j, const std::string& dir) {
  std::vector<std::string> a = {"run", "--config", j.config, "--kernel", j.kernel, "--out", dir, "--json",
                                "--seed", std::to_string(j.seed)};
  if (!j.variant.empty()) a.insert(a.end(), {"--variant", j.variant});
  if (!j.fidelity.empty()) a.insert(a.end(), {"--fidelity", j.fidelity});
  if (!j.shape.empty()) {
    std::string s;
    for (const auto& [k, v] : j.shape) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
    a.insert(a.end(), {"--shape", s});
  }
  if (!j.params.empty()) {
    std::string s;
    for (const auto& [k, v] : j.params) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
    a.insert(a.end(), {"--param", s});
  }
  for (const auto& set : j.overrides) a.insert(a.end(), {"--set", set});
  if (j.no_data) a.push_back("--no-data");
  return a;
}

std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, int parallel, const std::string& out,
                                const std::function<void(const JobResult&)>& on_done,
                                const std::function<void()>& on_tick) {
  std::vector<JobResult> results;
  std::vector<Running> running;
  std::size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < std::max(1, parallel)) {
      const Job& j = jobs[next++];
      std::string dir_name = j.id;
      std::replace(dir_name.begin(), dir_name.end(), '/', '.');
      const fs::path dir = fs::path(out) / "jobs" / dir_name;
      running.push_back({j, spawn(run_args(j, dir.string()), dir), dir, std::chrono::steady_clock::now()});
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
      std::ofstream(it->dir / "result.json") << to_json(results.back(), "").dump(2) << '\n';
      if (on_done) on_done(results.back());
      it = running.erase(it);
    }
    if (on_tick) on_tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  return results;
}

}  // namespace tessera::cli::regress
