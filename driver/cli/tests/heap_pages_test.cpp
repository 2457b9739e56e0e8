// When `tessera` starts itself again with glibc's heap in huge pages
// (heap_pages.h), and that the binary does: its environment, read from
// /proc while it runs, names the tunable after the new start.
#include "heap_pages.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

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
}

// The binary itself, started without GLIBC_TUNABLES: polls its environment
// until it names the tunable or the run ends (the new start comes within
// milliseconds of a run that takes tens of them).
TEST(HeapPages, TheBinaryStartsAgainWithTheTunable) {
  // The test is built as the binary is (the sanitizer lane's both are).
  if (!huge_page_heap_built()) GTEST_SKIP() << "a sanitizer's allocator: tessera does not start again";
  HeapPagesContext here;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  here.thp_enabled.assign(std::istreambuf_iterator<char>(thp), std::istreambuf_iterator<char>());
#if defined(__GLIBC__)
  here.glibc_version = gnu_get_libc_version();
#endif
  here.ld_preload = std::getenv("LD_PRELOAD");
  const std::string expected = huge_page_heap_tunables(here);
  if (expected.empty()) GTEST_SKIP() << "this host would not start tessera again (THP off, or an old glibc)";

  std::vector<std::string> env_text{fmt::format("TESSERA_CONFIG_DIR={}/configs", TESSERA_SOURCE_DIR)};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("GLIBC_TUNABLES=", 0) != 0 && std::string(*e).rfind("TESSERA_CONFIG_DIR=", 0) != 0)
      env_text.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& s : env_text) env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> args_text{TESSERA_BIN, "run",      "--config", "neuroncore-v2", "--kernel", "elementwise",
                                     "--shape",   "R=8192,C=8192", "--fidelity", "tlm", "--no-data"};
  std::vector<char*> args;
  for (std::string& s : args_text) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, TESSERA_BIN, &quiet, nullptr, args.data(), env.data()), 0);
  posix_spawn_file_actions_destroy(&quiet);
  bool seen = false;
  int status = 0;
  for (;;) {
    std::ifstream in(fmt::format("/proc/{}/environ", pid));
    const std::string environ_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    seen |= environ_text.find("GLIBC_TUNABLES=" + expected + '\0') != std::string::npos;
    if (seen || waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (seen) waitpid(pid, &status, 0);
  EXPECT_TRUE(seen) << "tessera's environment never named " << expected;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace tessera::cli
