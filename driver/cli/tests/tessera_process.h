// Runs the real `tessera` binary (TESSERA_BIN, with the source tree's
// configs) as a user would, capturing exit status, stdout and stderr.
#pragma once

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tessera::test_support {

// A scratch folder of this test process's own, removed when the process
// ends. CTest runs every test in a process of its own, two or more at once;
// tests that shared fixed names under /tmp raced (one's study file rewritten
// or its output folder removed under another).
inline std::filesystem::path scratch_dir() {
  struct Scratch {
    pid_t owner = ::getpid();
    std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("tessera_test_{}", ::getpid());
    Scratch() { std::filesystem::create_directories(dir); }
    ~Scratch() {
      std::error_code ignored;
      if (::getpid() == owner) std::filesystem::remove_all(dir, ignored);  // not from a forked child
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

struct TesseraResult {
  int status = -1;
  std::string out;
  std::string err;
};

// `env`: assignments put before the command ("NAME=value ...").
inline TesseraResult run_tessera(const std::string& args, const std::string& env = {}) {
  namespace fs = std::filesystem;
  const fs::path err_file = fs::temp_directory_path() / fmt::format("tessera_cli_err_{}", ::getpid());
  const std::string cmd = fmt::format("{} TESSERA_CONFIG_DIR={}/configs {} {} 2>{}", env, TESSERA_SOURCE_DIR,
                                      TESSERA_BIN, args, err_file.string());
  TesseraResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove(err_file);
  return r;
}

}  // namespace tessera::test_support
