#include "files.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unistd.h>

namespace tessera::cli {
namespace fs = std::filesystem;

namespace {

struct Closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void fail(const fs::path& file, const char* what, int error) {
  throw FileError(fmt::format("{}: cannot {}: {}", file.string(), what, std::strerror(error)));
}

}  // namespace

std::string read_file(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw FileError(fmt::format("{}: cannot read: it is a folder", file.string()));
  std::unique_ptr<std::FILE, Closer> in(std::fopen(file.c_str(), "rb"));
  if (!in) fail(file, "read", errno);
  std::string text;
  char buf[65536];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, in.get())) text.append(buf, n);
  if (std::ferror(in.get())) fail(file, "read", errno);
  return text;
}

void write_file(const fs::path& file, const std::string& text) {
  std::FILE* raw = std::fopen(file.c_str(), "wb");
  if (!raw) fail(file, "write", errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), raw) == text.size() && std::fflush(raw) == 0;
  const int error = errno;
  // fclose reports what the last flush could not (NFS, a full disk).
  const bool closed = std::fclose(raw) == 0;
  if (!written) fail(file, "write", error);
  if (!closed) fail(file, "write", errno);
}

void check_writable(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw FileError(fmt::format("{}: cannot write: it is a folder", file.string()));
  if (fs::exists(file, ec)) {
    if (access(file.c_str(), W_OK) != 0) fail(file, "write", errno);
    return;
  }
  std::FILE* f = std::fopen(file.c_str(), "wb");
  if (!f) fail(file, "write", errno);
  std::fclose(f);
  fs::remove(file, ec);
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError(fmt::format("{}: cannot create the folder: {}", dir.string(), ec.message()));
}

void prepare_output(const std::filesystem::path& file) {
  if (file.has_parent_path()) make_dirs(file.parent_path());
  check_writable(file);
}

}  // namespace tessera::cli
