#include "profile_page.h"

#include "files.h"

#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace tessera::cli {
namespace assets {
extern const std::string_view profile_html, profile_js, echarts_js;  // html_assets.cpp (cmake/embed_assets.cmake)
}

namespace {

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON inside a <script> element: "</" would end the element early, and
// "<\/" is the same string to JSON.
std::string script_json(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

// The template with its markers replaced, each once, in the order they appear.
std::string fill(const std::string& title, const nlohmann::json& data) {
  const std::pair<std::string_view, std::string> parts[] = {
      {"@TITLE@", escape_html(title)},
      {"@DATA@", script_json(data)},
      {"@ECHARTS@", std::string(assets::echarts_js)},
      {"@PAGE@", std::string(assets::profile_js)},
  };
  const std::string_view html = assets::profile_html;
  std::string out;
  std::size_t at = 0;
  for (const auto& [marker, text] : parts) {
    const std::size_t found = html.find(marker, at);
    if (found == std::string_view::npos)
      throw std::logic_error("driver/html/profile.html has no " + std::string(marker));
    out.append(html.substr(at, found - at));
    out += text;
    at = found + marker.size();
  }
  out.append(html.substr(at));
  return out;
}

}  // namespace

std::string run_page(const std::string& title, const nlohmann::json& report, const nlohmann::json& trace) {
  return fill(title, {{"kind", "run"}, {"title", title}, {"report", report}, {"trace", trace}});
}

std::string compare_page(const std::string& title, const nlohmann::json& rows, const nlohmann::json& reports) {
  return fill(title, {{"kind", "compare"}, {"title", title}, {"compare", rows}, {"reports", reports}});
}

std::string sweep_page(const std::string& title, const nlohmann::json& results) {
  nlohmann::json data = results;
  for (auto& point : data["points"]) {
    const nlohmann::json report = point.value("report", nlohmann::json::object());
    nlohmann::json kept = nlohmann::json::object();
    for (const char* key : {"time_ns", "hfu_percent", "achieved_tflops", "bound_by", "config"})
      if (report.contains(key)) kept[key] = report[key];
    point["report"] = std::move(kept);
  }
  return fill(title, {{"kind", "sweep"}, {"title", title}, {"sweep", std::move(data)}});
}

std::string regress_page(const std::string& title, const nlohmann::json& jobs) {
  return fill(title, {{"kind", "regress"}, {"title", title}, {"jobs", jobs}});
}

void write_page(const std::string& path, const std::string& page) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) make_dirs(p.parent_path());
  write_file(p, page);
}

}  // namespace tessera::cli
