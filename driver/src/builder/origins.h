// Where each operation came from: the label in force and the KernelBuilder
// call site, interned so that an operation carries one index. Most calls
// come from the few lines of a kernel's loops, so consecutive operations
// usually share an origin and interning costs a comparison.
#pragma once

#include "tessera/program.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace tessera::builder {

class Origins {
public:
  struct Origin {
    int label = -1;  // index into the kernel's labels; -1: none
    CallSite site;
  };

  // The origin of an operation made under `label` by a call at file:line
  // (a SourceLocation's; "" or line 0: unknown).
  int of(int label, const char* file, std::uint32_t line);

  const Origin& operator[](int id) const { return origins_.at(static_cast<std::size_t>(id)); }
  // The files the call sites name (CallSite::file indexes them).
  const std::vector<std::string>& files() const { return files_; }

  // How a compiler's file name reads in profiles: relative to the source
  // tree when it lies inside it (compilers name files as given to them,
  // absolute, or relative to the build folder when ccache rewrites paths),
  // otherwise as given.
  static std::string display_name(const std::string& file);

private:
  int file_index(const char* file);

  std::vector<Origin> origins_;
  std::map<std::tuple<int, int, std::uint32_t>, int> ids_;  // (label, file, line) -> origin
  std::vector<std::string> files_;
  std::map<const char*, int> file_by_pointer_;  // a string literal per file and translation unit
  std::map<std::string, int> file_by_name_;
  int last_ = -1;
  int last_label_ = -2;
  const char* last_file_ = nullptr;
  std::uint32_t last_line_ = 0;
};

}  // namespace tessera::builder
