#include "json_text.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <stdexcept>

namespace tessera {

void JsonText::new_line() {
  out_ += '\n';
  out_.append(2 * open_.size(), ' ');
}

void JsonText::before_value() {
  if (open_.empty()) return;
  Level& top = open_.back();
  if (top.object) {
    if (!after_key_) throw std::logic_error("JsonText: a value in an object without its key");
    after_key_ = false;
    return;
  }
  if (!top.empty) out_ += ',';
  top.empty = false;
  new_line();
}

void JsonText::begin_object() {
  before_value();
  out_ += '{';
  open_.push_back({true, true, {}});
}

void JsonText::begin_array() {
  before_value();
  out_ += '[';
  open_.push_back({false, true, {}});
}

void JsonText::end() {
  if (open_.empty() || after_key_) throw std::logic_error("JsonText: end() with nothing open, or after a key");
  const Level top = open_.back();
  open_.pop_back();
  if (!top.empty) new_line();
  out_ += top.object ? '}' : ']';
}

void JsonText::key(std::string_view k) {
  if (open_.empty() || !open_.back().object || after_key_)
    throw std::logic_error(fmt::format("JsonText: key \"{}\" outside an object, or after another key", k));
  Level& top = open_.back();
  if (!top.empty && k <= top.last_key)
    throw std::logic_error(fmt::format("JsonText: key \"{}\" after \"{}\": an object's keys go in ascending order, "
                                       "as a document holds them",
                                       k, top.last_key));
  if (!top.empty) out_ += ',';
  top.empty = false;
  top.last_key = k;
  new_line();
  string(k);
  out_ += ": ";
  after_key_ = true;
}

void JsonText::value(double v) {
  before_value();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  // nlohmann's own shortest round-trip form (Grisu2, "2.0" for an integer
  // value), which its dump() writes: the one detail this borrows.
  std::array<char, 64> buffer;
  const char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
  out_.append(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
}

void JsonText::value(std::int64_t v) {
  before_value();
  const fmt::format_int digits(v);
  out_.append(digits.data(), digits.size());
}

void JsonText::value(std::uint64_t v) {
  before_value();
  const fmt::format_int digits(v);
  out_.append(digits.data(), digits.size());
}

void JsonText::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
}

void JsonText::value(std::string_view s) {
  before_value();
  string(s);
}

namespace {

// The bytes a string cannot hold as they are: the controls, quote and
// backslash (escaped here), and those past ASCII (see string()).
constexpr std::array<bool, 256> kNotPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
  return t;
}();

}  // namespace

void JsonText::string(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && !kNotPlain[static_cast<unsigned char>(s[i])]) ++i;
  if (i == s.size()) {  // nearly every string in a report
    out_ += '"';
    out_.append(s);
    out_ += '"';
    return;
  }
  // Bytes past ASCII: nlohmann checks the UTF-8 (and throws on a bad
  // sequence); such strings (rare in a report) go through it whole.
  for (std::size_t j = i; j < s.size(); ++j)
    if (static_cast<unsigned char>(s[j]) >= 0x80) {
      out_ += nlohmann::json(std::string(s)).dump();
      return;
    }
  out_ += '"';
  std::size_t plain = 0;  // the start of the bytes not yet copied
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!kNotPlain[c]) continue;
    out_.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\b': out_ += "\\b"; break;
      case '\f': out_ += "\\f"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default: out_ += fmt::format("\\u{:04x}", c); break;
    }
  }
  out_.append(s.data() + plain, s.size() - plain);
  out_ += '"';
}

void JsonText::value(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      begin_object();
      for (const auto& [k, member] : v.items()) {
        key(k);
        value(member);
      }
      end();
      return;
    case nlohmann::json::value_t::array:
      begin_array();
      for (const auto& element : v) value(element);
      end();
      return;
    case nlohmann::json::value_t::string: value(v.get_ref<const std::string&>()); return;
    case nlohmann::json::value_t::boolean: value(v.get<bool>()); return;
    case nlohmann::json::value_t::number_integer: value(v.get<std::int64_t>()); return;
    case nlohmann::json::value_t::number_unsigned: value(v.get<std::uint64_t>()); return;
    case nlohmann::json::value_t::number_float: value(v.get<double>()); return;
    default:
      before_value();
      out_ += v.dump();  // null (binary and discarded values never reach a report)
      return;
  }
}

}  // namespace tessera
