#include "process.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::cli {

int run_program(const std::vector<std::string>& argv, std::string* out, std::string* err) {
  if (argv.empty()) return -1;
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((out && pipe(out_pipe) != 0) || (err && pipe(err_pipe) != 0)) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (out) dup2(out_pipe[1], 1);
    if (err) dup2(err_pipe[1], 2);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    execvp(args[0], args.data());
    _exit(127);
  }
  if (out) close(out_pipe[1]);
  if (err) close(err_pipe[1]);
  // Both pipes read together, so that neither fills while the other waits.
  std::vector<pollfd> fds;
  std::vector<std::string*> sinks;
  if (out) fds.push_back({out_pipe[0], POLLIN, 0}), sinks.push_back(out);
  if (err) fds.push_back({err_pipe[0], POLLIN, 0}), sinks.push_back(err);
  for (auto* s : sinks) s->clear();
  std::size_t open = fds.size();
  char buf[4096];
  while (open > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace tessera::cli
