#include "job.h"

#include <charconv>

namespace tessera::cli::runner {
namespace {

struct StatusName {
  Status status;
  const char* name;
};

constexpr StatusName kStatusNames[] = {
    {Status::Pass, "pass"},       {Status::Fail, "fail"},       {Status::Error, "error"},
    {Status::Crash, "crash"},     {Status::Timeout, "timeout"}, {Status::Slower, "slower"},
    {Status::Faster, "faster"},   {Status::Missing, "missing"}, {Status::Infeasible, "infeasible"},
    {Status::Interrupted, "interrupted"}, {Status::Disagree, "disagree"},
};

}  // namespace

const char* to_string(Status s) {
  for (const auto& n : kStatusNames)
    if (n.status == s) return n.name;
  return "?";
}

std::optional<Status> parse_status(const std::string& text) {
  for (const auto& n : kStatusNames)
    if (text == n.name) return n.status;
  return std::nullopt;
}

nlohmann::json to_json(const JobResult& r, const std::string& suite) {
  const Job& j = r.job;
  nlohmann::json out = {{"suite", suite},       {"id", j.id},           {"test", j.test},
                        {"kernel", j.kernel},   {"variant", j.variant}, {"config", j.config},
                        {"fidelity", j.fidelity}, {"shape", j.shape},   {"seed", j.seed},
                        {"status", to_string(r.status)}, {"message", r.message},
                        {"wall_seconds", r.wall_seconds}, {"report", r.report}};
  if (!j.params.empty()) out["params"] = j.params;
  if (!j.dtype.empty()) out["dtype"] = j.dtype;
  if (j.cores > 0) out["cores"] = j.cores;
  if (!j.shard.empty()) out["shard"] = j.shard;
  if (!j.agree_group.empty()) out["agree_group"] = j.agree_group;
  return out;
}

JobResult result_from_json(const nlohmann::json& j, std::string* suite) {
  JobResult r;
  r.job.id = j.at("id");
  r.job.test = j.value("test", std::string());
  r.job.kernel = j.value("kernel", std::string());
  r.job.variant = j.value("variant", std::string());
  r.job.config = j.value("config", std::string());
  r.job.fidelity = j.value("fidelity", std::string());
  r.job.shape = j.value("shape", std::map<std::string, std::int64_t>());
  r.job.params = j.value("params", std::map<std::string, std::string>());
  r.job.dtype = j.value("dtype", std::string());
  r.job.cores = j.value("cores", 0);
  r.job.shard = j.value("shard", std::string());
  r.job.seed = j.value("seed", std::uint64_t{1});
  r.job.agree_group = j.value("agree_group", std::string());
  const std::string status = j.at("status");
  const auto s = parse_status(status);
  if (!s) throw nlohmann::json::other_error::create(501, "unknown job status '" + status + "'", &j);
  r.status = *s;
  r.message = j.value("message", std::string());
  r.wall_seconds = j.value("wall_seconds", 0.0);
  r.report = j.value("report", nlohmann::json::object());
  if (suite) *suite = j.value("suite", *suite);
  return r;
}

bool parse_shard(const std::string& text, int* index, int* count) {
  // Strictly "I/N" in decimal: sscanf's %d would wrap 4294967297 to 1.
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  const auto number = [](const std::string& t, int* out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size();
  };
  return number(text.substr(0, slash), index) && number(text.substr(slash + 1), count) && *count >= 1 &&
         *count <= kMaxShards && *index >= 1 && *index <= *count;
}

}  // namespace tessera::cli::runner
