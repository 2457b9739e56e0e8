#include "builder/origins.h"

#include <filesystem>
#include <tuple>

namespace tessera::builder {

namespace fs = std::filesystem;

std::string Origins::display_name(const std::string& file) {
  if (file.empty()) return file;
  fs::path p(file);
  if (p.is_relative()) {
    // Relative to the build folder (where the compiler ran); a name that
    // does not climb out of it was not a source file's.
    if (*p.lexically_normal().begin() != "..") return file;
    p = fs::path(TESSERA_BINARY_DIR) / p;
  }
  p = p.lexically_normal();
  const fs::path relative = p.lexically_relative(fs::path(TESSERA_SOURCE_DIR).lexically_normal());
  if (!relative.empty() && *relative.begin() != "..") return relative.generic_string();
  return file;
}

int Origins::file_index(const char* file) {
  const auto known = file_by_pointer_.find(file);
  if (known != file_by_pointer_.end()) return known->second;
  const std::string name = display_name(file);
  auto [it, added] = file_by_name_.emplace(name, static_cast<int>(files_.size()));
  if (added) files_.push_back(name);
  file_by_pointer_.emplace(file, it->second);
  return it->second;
}

int Origins::of(int label, const char* file, std::uint32_t line) {
  if (last_ >= 0 && label == last_label_ && file == last_file_ && line == last_line_) return last_;
  const bool known = file && *file && line > 0;
  const int f = known ? file_index(file) : -1;
  const auto [it, added] = ids_.emplace(std::make_tuple(label, f, known ? line : 0), static_cast<int>(origins_.size()));
  if (added) origins_.push_back({label, CallSite{f, known ? line : 0}});
  last_ = it->second;
  last_label_ = label;
  last_file_ = file;
  last_line_ = line;
  return last_;
}

}  // namespace tessera::builder
