#include "job_runner.h"

#include "files.h"
#include "slurm.h"

#include "common/bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <poll.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::cli::runner {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long jobs asked to stop by an interrupt get before SIGKILL.
constexpr std::chrono::seconds kInterruptGrace{5};
constexpr std::chrono::milliseconds kTick{500};

// ---- Signals: a self-pipe the handlers write to, the loop polls ----------

int g_wake[2] = {-1, -1};
std::atomic<int> g_interrupts{0};
std::atomic<int> g_interrupt_signal{0};
// The running jobs' process groups, for the second interrupt's SIGKILL
// (a handler may only read plain atomics).
std::atomic<pid_t> g_running[kMaxParallel];

void wake() {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_wake[1], &byte, 1);  // a full pipe is awake already
  errno = saved;
}

void on_child(int) { wake(); }

void on_interrupt(int sig) {
  if (g_interrupts.fetch_add(1) == 0) {
    g_interrupt_signal = sig;
    wake();
    return;
  }
  // The second: every job now, then the runner by the same signal.
  for (auto& pid : g_running)
    if (const pid_t p = pid.load(); p > 0) kill(-p, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

void drain() {
  char buf[256];
  while (read(g_wake[0], buf, sizeof buf) > 0) {
  }
}

// Installs the handlers for the runner's lifetime in this scope.
class SignalScope {
public:
  SignalScope() {
    if (g_wake[0] < 0 && pipe2(g_wake, O_NONBLOCK | O_CLOEXEC) != 0)
      throw std::runtime_error(fmt::format("cannot create the runner's pipe: {}", std::strerror(errno)));
    g_interrupts = 0;
    for (auto& pid : g_running) pid = 0;
    install(SIGCHLD, on_child, SA_NOCLDSTOP, &old_chld_);
    install(SIGINT, on_interrupt, 0, &old_int_);
    install(SIGTERM, on_interrupt, 0, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGCHLD, &old_chld_, nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

private:
  static void install(int sig, void (*handler)(int), int flags, struct sigaction* old) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sa.sa_flags = flags | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, old);
  }
  struct sigaction old_chld_ {}, old_int_ {}, old_term_ {};
};

// ---- Jobs ------------------------------------------------------------------

struct Running {
  Job job;
  pid_t pid;
  fs::path dir;
  Clock::time_point start, deadline;
  std::size_t slot;  // in g_running
};

// The log's first line: the command that reproduces the job.
std::string command_line(const std::vector<std::string>& args) {
  std::string command = self_exe();
  for (const auto& a : args)
    command += " " + (a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=,:+-") ==
                              std::string::npos
                          ? a
                          : slurm::shell_quote(a));
  return command;
}

pid_t spawn(const std::vector<std::string>& args, const fs::path& dir) {
  // A folder left by an earlier run would mix its results with this one's.
  fs::remove_all(dir);
  make_dirs(dir);
  write_file(dir / "log.txt", "$ " + command_line(args) + "\n");
  const std::string out_path = (dir / "stdout.json").string(), err_path = (dir / "log.txt").string();
  std::vector<char*> argv;
  const std::string& self = self_exe();
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("cannot start a job: fork: {}", std::strerror(errno)));
  if (pid > 0) {
    // Also here, so that the group exists before the parent signals it.
    setpgid(pid, pid);
    return pid;
  }
  // Child: its own process group (a timeout kills all of it), killed when
  // the runner dies, its report on stdout and its log on stderr.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the runner died before prctl
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_APPEND, 0644);
  if (out < 0 || err < 0) _exit(127);
  dup2(out, 1);
  dup2(err, 2);
  execv(self.c_str(), argv.data());
  _exit(127);
}

enum class Ending { Exited, TimedOut, Interrupted };

JobResult finish(const Running& r, int status, Ending ending) {
  JobResult res;
  res.job = r.job;
  res.wall_seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
  std::string log;
  try {
    log = read_file(r.dir / "log.txt");
  } catch (const FileError& e) {
    log = e.what();
  }
  const auto tail = [&] {
    const std::size_t at = log.size() > 600 ? log.size() - 600 : 0;
    return log.substr(at);
  };
  std::string out;
  try {
    out = read_file(r.dir / "stdout.json");
    res.report = nlohmann::json::parse(out);
  } catch (const std::exception&) {
    res.report = nlohmann::json::object();
  }
  // The runner holds every job's report until the suite ends, and writes
  // each into result.json and results.json. The critical path's steps and
  // waits (up to 10,000 of each) are nine tenths of a report's bytes; they
  // stay in the job's report.json, and the path's totals and its shares by
  // engine and label stay here. The smoke suite's runner peaked at 346 MiB
  // holding them.
  if (const auto path = res.report.find("critical_path"); path != res.report.end() && path->is_object()) {
    path->erase("steps");
    path->erase("waits");
  }
  // The run wrote the same report to its folder (--out): one copy on disk
  // is enough, and a suite's reports run to hundreds of MB. stdout.json
  // stays when it differs, e.g. holds an error the run wrote nowhere else.
  try {
    std::error_code ec;
    if (!out.empty() && fs::exists(r.dir / "report.json", ec) && read_file(r.dir / "report.json") == out)
      fs::remove(r.dir / "stdout.json", ec);
  } catch (const std::exception&) {
    // Unreadable: both copies stay, which costs disk only.
  }
  if (ending == Ending::TimedOut) {
    res.status = Status::Timeout;
    res.message = fmt::format("killed after {:.0f} s (timeout_s {})\nlog tail:\n{}", res.wall_seconds,
                              r.job.timeout_s, tail());
  } else if (ending == Ending::Interrupted && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    res.status = Status::Interrupted;
    res.message = fmt::format("stopped after {:.1f} s: the run was interrupted\nlog tail:\n{}", res.wall_seconds,
                              tail());
  } else if (WIFSIGNALED(status)) {
    res.status = Status::Crash;
    // The cause on the first line (failures are bucketed by it), the log after.
    res.message = fmt::format("killed by signal {} ({})\nlog tail:\n{}", WTERMSIG(status),
                              strsignal(WTERMSIG(status)), tail());
  } else if (WEXITSTATUS(status) == 0) {
    res.status = Status::Pass;
  } else {
    res.status = WEXITSTATUS(status) == 2 ? Status::Error : Status::Fail;
    res.message = res.report.value("error", std::string());
    if (res.message.empty()) res.message = fmt::format("exit status {}\nlog tail:\n{}", WEXITSTATUS(status), tail());
  }
  return res;
}

fs::path job_dir(const std::string& out, const Job& j) {
  std::string name = j.id;
  std::replace(name.begin(), name.end(), '/', '.');
  return fs::path(out) / "jobs" / name;
}

Clock::time_point deadline_of(Clock::time_point start, double timeout_s) {
  // Timeouts are checked positive and finite when a suite or study is read;
  // a day is the longest a wait is told.
  const double s = std::min(std::max(timeout_s, 0.0), 86400.0 * 365);
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
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
  if (!j.dtype.empty()) a.insert(a.end(), {"--dtype", j.dtype});
  if (j.cores > 0) a.insert(a.end(), {"--cores", std::to_string(j.cores)});
  if (!j.shard.empty()) a.insert(a.end(), {"--shard", j.shard});
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
  if (j.retune > 0) a.insert(a.end(), {"--retune", std::to_string(j.retune)});
  return a;
}

// A job's reference check spreads over the CPUs the process may use
// (kernels::check_threads): with several jobs at once, each gets its share
// of them, so that N jobs do not start N check threads each. Unless the
// user set TESSERA_CHECK_THREADS; the jobs inherit it from the runner.
class ShareCheckThreads {
public:
  explicit ShareCheckThreads(std::size_t at_once) {
    if (at_once <= 1 || std::getenv("TESSERA_CHECK_THREADS")) return;
    const std::size_t share = std::max<std::size_t>(1, kernels::check_threads() / at_once);
    setenv("TESSERA_CHECK_THREADS", std::to_string(share).c_str(), 1);
    set_ = true;
  }
  ~ShareCheckThreads() {
    if (set_) unsetenv("TESSERA_CHECK_THREADS");
  }
  ShareCheckThreads(const ShareCheckThreads&) = delete;
  ShareCheckThreads& operator=(const ShareCheckThreads&) = delete;

private:
  bool set_ = false;
};

std::vector<JobResult> run_jobs(const std::vector<Job>& jobs, int parallel, const std::string& out,
                                const std::function<void(const JobResult&)>& on_done,
                                const std::function<void()>& on_tick, bool* interrupted) {
  const SignalScope signals;
  const std::size_t slots = static_cast<std::size_t>(std::clamp(parallel, 1, kMaxParallel));
  const ShareCheckThreads check_threads(std::min(slots, jobs.size()));
  std::vector<bool> slot_used(slots, false);
  std::vector<JobResult> results;
  std::vector<Running> running;
  std::size_t next = 0;
  bool stopping = false;
  Clock::time_point kill_at{};
  auto last_tick = Clock::now();

  const auto done = [&](const Running& r, int status, Ending ending) {
    g_running[r.slot] = 0;
    slot_used[r.slot] = false;
    results.push_back(finish(r, status, ending));
    write_file(r.dir / "result.json", to_json(results.back(), "").dump(2) + "\n");
    if (on_done) on_done(results.back());
  };

  while ((!stopping && next < jobs.size()) || !running.empty()) {
    if (!stopping && g_interrupts > 0) {
      // Ask every job to stop; the grace period ends with SIGKILL below.
      stopping = true;
      kill_at = Clock::now() + kInterruptGrace;
      for (const auto& r : running) kill(-r.pid, SIGTERM);
    }
    while (!stopping && next < jobs.size() && running.size() < slots) {
      const Job& j = jobs[next++];
      const fs::path dir = job_dir(out, j);
      const std::size_t slot = static_cast<std::size_t>(std::find(slot_used.begin(), slot_used.end(), false) - slot_used.begin());
      const auto start = Clock::now();
      const pid_t pid = spawn(run_args(j, dir.string()), dir);
      slot_used[slot] = true;
      g_running[slot] = pid;
      running.push_back({j, pid, dir, start, deadline_of(start, j.timeout_s), slot});
    }
    // Reap whatever has ended, and kill what is past its time.
    const auto now = Clock::now();
    bool changed = false;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t ended = waitpid(it->pid, &status, WNOHANG);
      Ending ending = stopping ? Ending::Interrupted : Ending::Exited;
      if (ended == 0) {
        const bool timed_out = now >= it->deadline;
        if (!timed_out && !(stopping && now >= kill_at)) {
          ++it;
          continue;
        }
        kill(-it->pid, SIGKILL);
        while (waitpid(it->pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (timed_out && !stopping) ending = Ending::TimedOut;
      }
      done(*it, status, ending);
      it = running.erase(it);
      changed = true;
    }
    if (changed) continue;  // start the next jobs before waiting again
    // Sleep until a child ends, an interrupt comes, a deadline passes or the
    // progress line is due.
    auto until = now + kTick;
    for (const auto& r : running) until = std::min(until, r.deadline);
    if (stopping) until = std::min(until, kill_at);
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1;
    pollfd p{g_wake[0], POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::clamp<long long>(wait_ms, 0, kTick.count())));
    drain();
    if (on_tick && Clock::now() - last_tick >= kTick) {
      on_tick();
      last_tick = Clock::now();
    }
  }
  // Jobs an interrupt kept from starting are listed too, so that the
  // results hold every job.
  for (std::size_t i = next; i < jobs.size(); ++i) {
    JobResult r;
    r.job = jobs[i];
    r.status = Status::Interrupted;
    r.message = "not started: the run was interrupted";
    results.push_back(std::move(r));
  }
  if (interrupted) *interrupted = stopping;
  std::sort(results.begin(), results.end(), [](const JobResult& a, const JobResult& b) { return a.job.id < b.job.id; });
  return results;
}

}  // namespace tessera::cli::runner
