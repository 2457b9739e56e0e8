// When `tessera` starts itself again with glibc's heap in huge pages
// (heap_pages.h), and that the binary does so once, with the tunable.
#include "heap_pages.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <signal.h>
#include <sys/ptrace.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>


extern char** environ;

namespace tessera::cli {
namespace {

HeapPagesContext debian_12() {
  HeapPagesContext c;
  c.thp_enabled = "always [madvise] never\n";
  c.glibc_version = "2.36";
  return c;
}

TEST(HeapPages, StartsAgainWithTheTunableWhereGlibcAndTheKernelHaveIt) {
  EXPECT_EQ(huge_page_heap_tunables(debian_12()), "glibc.malloc.hugetlb=1");
  HeapPagesContext always = debian_12();
  always.thp_enabled = "[always] madvise never\n";
  EXPECT_EQ(huge_page_heap_tunables(always), "glibc.malloc.hugetlb=1");
  HeapPagesContext newer = debian_12();
  newer.glibc_version = "2.40";
  EXPECT_EQ(huge_page_heap_tunables(newer), "glibc.malloc.hugetlb=1");
}

TEST(HeapPages, KeepsTheUsersOtherTunables) {
  HeapPagesContext c = debian_12();
  c.glibc_tunables = "glibc.malloc.arena_max=2";
  EXPECT_EQ(huge_page_heap_tunables(c), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  c.glibc_tunables = "";
  EXPECT_EQ(huge_page_heap_tunables(c), "glibc.malloc.hugetlb=1");
}

TEST(HeapPages, RunsOnAsItIsOtherwise) {
  HeapPagesContext named = debian_12();  // by the user, or by the first start: no loop
  named.glibc_tunables = "glibc.malloc.hugetlb=0";
  EXPECT_EQ(huge_page_heap_tunables(named), "");
  named.glibc_tunables = "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1";
  EXPECT_EQ(huge_page_heap_tunables(named), "");
  HeapPagesContext never = debian_12();
  never.thp_enabled = "always madvise [never]\n";
  EXPECT_EQ(huge_page_heap_tunables(never), "");
  never.thp_enabled = "";  // no THP in the kernel
  EXPECT_EQ(huge_page_heap_tunables(never), "");
  HeapPagesContext old = debian_12();
  old.glibc_version = "2.31";
  EXPECT_EQ(huge_page_heap_tunables(old), "");
  old.glibc_version = nullptr;  // not glibc
  EXPECT_EQ(huge_page_heap_tunables(old), "");
  HeapPagesContext valgrind = debian_12();
  valgrind.ld_preload = "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so";
  EXPECT_EQ(huge_page_heap_tunables(valgrind), "");
  HeapPagesContext again = debian_12();  // the marker, whatever became of GLIBC_TUNABLES
  again.started_again = true;
  EXPECT_EQ(huge_page_heap_tunables(again), "");
  HeapPagesContext secure = debian_12();  // glibc would drop the tunable: no loop
  secure.secure = true;
  EXPECT_EQ(huge_page_heap_tunables(secure), "");
  HeapPagesContext loader = debian_12();
  loader.through_loader = true;
  EXPECT_EQ(huge_page_heap_tunables(loader), "");
}

// The binary itself, started without GLIBC_TUNABLES under ptrace, which
// stops it at each exec: exactly one new start, by its own path (its name
// stays "tessera"), with the tunable and the marker in its environment.
TEST(HeapPages, TheBinaryStartsAgainOnceWithTheTunable) {
  // The test is built as the binary is (the sanitizer lane's both are).
  if (!huge_page_heap_built()) GTEST_SKIP() << "a sanitizer's allocator: tessera does not start again";
  std::vector<std::string> env_text{fmt::format("TESSERA_CONFIG_DIR={}/configs", TESSERA_SOURCE_DIR)};
  for (char** e = environ; *e; ++e) {
    const std::string var(*e);
    if (var.rfind("GLIBC_TUNABLES=", 0) != 0 && var.rfind("TESSERA_CONFIG_DIR=", 0) != 0 &&
        var.rfind(std::string(kHugePageHeapMarker) + "=", 0) != 0)
      env_text.push_back(var);
  }
  std::vector<char*> env;
  for (std::string& s : env_text) env.push_back(s.data());
  env.push_back(nullptr);
  const std::string expected = huge_page_heap_tunables(heap_pages_context(env.data()));
  if (expected.empty()) GTEST_SKIP() << "this host would not start tessera again (THP off, or an old glibc)";
  std::vector<std::string> args_text{TESSERA_BIN, "list", "configs"};
  std::vector<char*> args;
  for (std::string& s : args_text) args.push_back(s.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // only async-signal-safe calls until the exec
    if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(126);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execve(TESSERA_BIN, args.data(), env.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);  // stopped by its first exec
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126) GTEST_SKIP() << "ptrace is not allowed here";
  ASSERT_TRUE(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP) << "status " << status;
  ptrace(PTRACE_SETOPTIONS, pid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
  int execs = 1, signal = 0;
  std::string environ_after, comm_after;
  for (;;) {
    ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<std::intptr_t>(signal)));
    if (waitpid(pid, &status, 0) != pid || WIFEXITED(status) || WIFSIGNALED(status)) break;
    signal = 0;
    if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
      if (++execs > 3) {  // a loop: stop it
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::ifstream in(fmt::format("/proc/{}/environ", pid));
      environ_after.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      std::ifstream comm(fmt::format("/proc/{}/comm", pid));
      std::getline(comm, comm_after);
    } else if (WSTOPSIG(status) != SIGTRAP) {
      signal = WSTOPSIG(status);  // pass the child's own signals on
    }
  }
  EXPECT_EQ(execs, 2);
  EXPECT_NE(environ_after.find("GLIBC_TUNABLES=" + expected + '\0'), std::string::npos);
  EXPECT_NE(environ_after.find(std::string(kHugePageHeapMarker) + "=restarted"), std::string::npos);
  EXPECT_EQ(comm_after, "tessera");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace tessera::cli
