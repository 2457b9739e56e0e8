// JSON text laid out exactly as nlohmann::json's dump(2) lays out a
// document (two-space indents, its number and string forms), written
// straight into a string rather than built as a document first.
//
// report.json holds tens of thousands of rows (the critical path's steps
// and waits, the cost by label). As a document they cost a tree node and an
// allocation per field, then a walk to print them: a quarter of a flash
// attention run's instructions (docs/performance.md). Written as they go
// they cost the text alone.
//
// A document keeps an object's keys sorted (std::map), so text that matches
// it writes them in ascending order; key() checks that and throws
// std::logic_error otherwise, so a field put out of order fails the first
// test that writes it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class JsonText {
public:
  explicit JsonText(std::string& out) : out_(out) {}

  void begin_object();
  void begin_array();
  void end();  // of the innermost open object or array
  // The key's characters must last until its object ends (the next key is
  // checked against it): a literal, or a string the caller holds meanwhile.
  void key(std::string_view k);

  void value(double v);
  void value(std::int64_t v);
  void value(std::uint64_t v);
  void value(int v) { value(static_cast<std::int64_t>(v)); }
  void value(bool v);
  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(const nlohmann::json& v);

  template <typename T>
  void member(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

private:
  struct Level {
    bool object;
    bool empty;
    std::string_view last_key;
  };
  void before_value();
  void new_line();
  void string(std::string_view s);

  std::string& out_;
  std::vector<Level> open_;
  bool after_key_ = false;
};

}  // namespace tessera
