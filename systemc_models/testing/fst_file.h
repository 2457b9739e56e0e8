// Reads a whole FST file (small ones: tests) through the FST reader
// Verilator ships: every signal's full dotted name, width and value changes.
// Link a library that compiles Verilator's FST tracing (tessera_cosim) and
// add ${VERILATOR_ROOT}/include to the include path.
#pragma once

#include <gtkwave/fstapi.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera::test_support {

struct FstSignal {
  std::uint32_t bits = 0;
  std::map<std::uint64_t, std::string> enum_names;  // value -> name, when an enum table is attached
  std::vector<std::pair<std::uint64_t, std::string>> changes;  // (time, value bits, MSB first)

  // The first time the value satisfies `pred`, or -1.
  template <class Pred>
  std::int64_t first(Pred pred) const {
    for (const auto& [t, v] : changes)
      if (pred(v)) return static_cast<std::int64_t>(t);
    return -1;
  }
  std::int64_t first_value(std::uint64_t value) const {
    return first([&](const std::string& v) { return to_uint(v) == value; });
  }
  std::uint64_t last_value() const { return changes.empty() ? 0 : to_uint(changes.back().second); }
  static std::uint64_t to_uint(const std::string& v) {
    std::uint64_t x = 0;
    for (char c : v) x = (x << 1) | (c == '1' ? 1u : 0u);
    return x;
  }
};

struct FstFile {
  std::map<std::string, FstSignal> signals;
  std::uint64_t start_time = 0, end_time = 0;
  int timescale = 0;  // power of ten of a second

  explicit FstFile(const std::string& path) {
    void* r = fstReaderOpen(path.c_str());
    if (!r) throw std::runtime_error("cannot read FST " + path);
    start_time = fstReaderGetStartTime(r);
    end_time = fstReaderGetEndTime(r);
    timescale = fstReaderGetTimescale(r);
    std::vector<std::string> scope;
    std::map<fstHandle, std::vector<std::string>> names;
    // Enum tables: a definition carries the table and a handle, a reference
    // only the handle, and applies to the next variable.
    std::map<std::uint64_t, std::map<std::uint64_t, std::string>> tables;
    const std::map<std::uint64_t, std::string>* pending_enum = nullptr;
    while (fstHier* h = fstReaderIterateHier(r)) {
      if (h->htyp == FST_HT_SCOPE) scope.push_back(h->u.scope.name);
      else if (h->htyp == FST_HT_UPSCOPE) scope.pop_back();
      else if (h->htyp == FST_HT_ATTRBEGIN && h->u.attr.typ == FST_AT_MISC &&
               h->u.attr.subtype == FST_MT_ENUMTABLE) {
        if (h->u.attr.name_length > 0) {
          if (fstETab* t = fstUtilityExtractEnumTableFromString(h->u.attr.name)) {
            auto& table = tables[h->u.attr.arg];
            for (std::uint32_t i = 0; i < t->elem_count; ++i) table[FstSignal::to_uint(t->val_arr[i])] = t->literal_arr[i];
            fstUtilityFreeEnumTable(t);
          }
        } else if (tables.count(h->u.attr.arg)) {
          pending_enum = &tables[h->u.attr.arg];
        }
      } else if (h->htyp == FST_HT_VAR) {
        std::string name;
        for (const auto& s : scope) name += s + ".";
        const std::string declared = h->u.var.name;  // "count_q [7:0]": the range after a space
        name += declared.substr(0, declared.find(' '));
        signals[name].bits = h->u.var.length;
        if (pending_enum) signals[name].enum_names = *pending_enum;
        pending_enum = nullptr;
        names[h->u.var.handle].push_back(name);
      }
    }
    struct Ctx {
      FstFile* self;
      std::map<fstHandle, std::vector<std::string>>* names;
    } ctx{this, &names};
    fstReaderSetFacProcessMaskAll(r);
    fstReaderIterBlocks(
        r,
        [](void* user, std::uint64_t time, fstHandle h, const unsigned char* value) {
          auto* c = static_cast<Ctx*>(user);
          for (const auto& n : (*c->names)[h])
            c->self->signals[n].changes.emplace_back(time, reinterpret_cast<const char*>(value));
        },
        &ctx, nullptr);
    fstReaderClose(r);
  }

  bool has(const std::string& name) const { return signals.count(name) > 0; }
  const FstSignal& at(const std::string& name) const {
    auto it = signals.find(name);
    if (it == signals.end()) throw std::out_of_range("no signal " + name + " in the FST");
    return it->second;
  }
  // The first signal whose name ends with `suffix` (RTL scopes carry the
  // Verilated top module's name).
  const FstSignal* find_suffix(const std::string& prefix, const std::string& suffix) const {
    for (const auto& [n, s] : signals)
      if (n.rfind(prefix, 0) == 0 && n.size() >= suffix.size() &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        return &s;
    return nullptr;
  }
};

}  // namespace tessera::test_support
