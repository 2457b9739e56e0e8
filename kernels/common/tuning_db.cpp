#include "common/tuning_db.h"

#include "arch/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <tuple>

namespace tessera::kernels {

std::string shape_bucket(const Shape& shape) {
  std::string text;
  for (const auto& [name, value] : shape) {
    std::int64_t b = 1;
    while (b < value) b *= 2;
    if (value <= 0) b = value;  // absent dimensions (padding 0) stay as they are
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", name, b);
  }
  return text;
}

nlohmann::json TuningEntry::to_json() const {
  return {{"kernel", kernel},   {"variant", variant},         {"config", config},
          {"bucket", bucket},   {"shape", shape},             {"params", params},
          {"time_ns", time_ns}, {"hfu_percent", hfu_percent}, {"strategy", strategy},
          {"evaluations", evaluations}, {"space_size", space_size}};
}

TuningEntry TuningEntry::from_json(const nlohmann::json& j) {
  TuningEntry e;
  e.kernel = j.at("kernel");
  e.variant = j.at("variant");
  e.config = j.at("config");
  e.shape = j.at("shape").get<Shape>();
  e.bucket = shape_bucket(e.shape);
  e.params = j.at("params").get<std::map<std::string, std::string>>();
  e.time_ns = j.at("time_ns");
  e.hfu_percent = j.value("hfu_percent", 0.0);
  e.strategy = j.value("strategy", std::string());
  e.evaluations = j.value("evaluations", std::size_t{0});
  e.space_size = j.value("space_size", std::size_t{0});
  return e;
}

TuningDb TuningDb::load(const std::string& path) {
  TuningDb db;
  std::ifstream in(path);
  if (!in) {
    if (std::filesystem::exists(path)) throw TuningDbError(fmt::format("{}: cannot read the tuning database", path));
    return db;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw TuningDbError(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_array())
    throw TuningDbError(fmt::format("{}: expected an object with an \"entries\" array", path));
  std::size_t n = 0;
  for (const auto& j : doc["entries"]) {
    ++n;
    try {
      db.put(TuningEntry::from_json(j));
    } catch (const nlohmann::json::exception& e) {
      throw TuningDbError(fmt::format("{}: entry {}: {}", path, n, e.what()));
    }
  }
  return db;
}

void TuningDb::save(const std::string& path) const {
  std::vector<TuningEntry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(), [](const TuningEntry& a, const TuningEntry& b) {
    return std::tie(a.kernel, a.variant, a.config, a.bucket) < std::tie(b.kernel, b.variant, b.config, b.bucket);
  });
  // One entry per line: a retune shows in a diff as the lines it changed.
  std::ostringstream text;
  text << "{\n  \"description\": \"Tuned parameters per kernel variant, config and shape bucket (tessera tune "
          "--update-db; docs/tuning.md)\",\n  \"entries\": [\n";
  for (std::size_t i = 0; i < sorted.size(); ++i)
    text << "    " << sorted[i].to_json().dump() << (i + 1 < sorted.size() ? ",\n" : "\n");
  text << "  ]\n}\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text.str();
    if (!out.flush()) throw TuningDbError(fmt::format("{}: cannot write the tuning database", tmp));
  }
  std::filesystem::rename(tmp, path);
}

const TuningEntry* TuningDb::find(const std::string& kernel, const std::string& variant, const std::string& config,
                                  const Shape& shape) const {
  const std::string bucket = shape_bucket(shape);
  for (const auto& e : entries_)
    if (e.kernel == kernel && e.variant == variant && e.config == config && e.bucket == bucket) return &e;
  return nullptr;
}

void TuningDb::put(TuningEntry e) {
  e.bucket = shape_bucket(e.shape);
  for (auto& old : entries_)
    if (old.kernel == e.kernel && old.variant == e.variant && old.config == e.config && old.bucket == e.bucket) {
      old = std::move(e);
      return;
    }
  entries_.push_back(std::move(e));
}

std::string default_tuning_db_path() {
  if (const char* p = std::getenv("TESSERA_TUNING_DB")) return std::string(p) == "none" ? "" : p;
  return (std::filesystem::path(arch::config_dir()) / "tuning.json").string();
}

const TuningDb& default_tuning_db() {
  static std::once_flag once;
  static TuningDb db;
  std::call_once(once, [] {
    const std::string path = default_tuning_db_path();
    if (!path.empty()) db = TuningDb::load(path);
  });
  return db;
}

}  // namespace tessera::kernels
