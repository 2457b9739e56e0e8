// The tuning database: for a kernel variant on a hardware generation and a
// shape bucket, the tunable parameters `tessera tune` found fastest and the
// time they gave. Default runs read it (resolve_params: what a run sets
// first, then the database, then the kernel's derived defaults), so a run,
// a regression or a what-if study gets each generation's own best tiling
// without naming it.
//
// The file is configs/tuning.json (beside the generations it was tuned on,
// installed with them); $TESSERA_TUNING_DB names another file, or "none" for
// no database (the kernels' derived defaults alone).
#pragma once

#include "common/kernel.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace tessera::kernels {

// The bucket a shape falls in: each dimension rounded up to a power of two
// ("K=8192,M=4096,N=8192"). Shapes of one bucket share an entry.
std::string shape_bucket(const Shape& shape);

struct TuningEntry {
  std::string kernel, variant, config;
  std::string bucket;  // shape_bucket(shape)
  Shape shape;         // the shape it was tuned at
  std::map<std::string, std::string> params;
  double time_ns = 0;  // what they gave at `shape` (tlm, timing only)
  double hfu_percent = 0;
  std::string strategy;          // how it was found
  std::size_t evaluations = 0;   // timed runs the search took
  std::size_t space_size = 0;    // points of the variant's space

  nlohmann::json to_json() const;
  static TuningEntry from_json(const nlohmann::json& j);
};

// A database problem: "FILE: entry N: message".
class TuningDbError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class TuningDb {
public:
  TuningDb() = default;
  // Reads a database file; a missing file is an empty database. Throws
  // TuningDbError naming the file and entry on malformed content.
  static TuningDb load(const std::string& path);
  // Writes it, entries sorted by kernel, variant, config, bucket.
  void save(const std::string& path) const;

  // The entry for a variant on a config at a shape's bucket; nullptr when none.
  const TuningEntry* find(const std::string& kernel, const std::string& variant, const std::string& config,
                          const Shape& shape) const;
  // Adds an entry, replacing the one of its kernel, variant, config and bucket.
  void put(TuningEntry e);
  const std::vector<TuningEntry>& entries() const { return entries_; }

private:
  std::vector<TuningEntry> entries_;
};

// $TESSERA_TUNING_DB, else <config dir>/tuning.json; "" for "none".
std::string default_tuning_db_path();
// The database default runs read, loaded once per process.
const TuningDb& default_tuning_db();

}  // namespace tessera::kernels
