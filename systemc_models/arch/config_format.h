// Renderings of a resolved config: annotated YAML that loads back to the same
// config, JSON for machines, and the schema reference in Markdown.
#pragma once

#include "arch/config.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tessera::arch {

// Fully resolved YAML (no `base:`), each value with its unit and where it was
// set, followed by the derived figures as comments. Loading it gives the same
// config, so every results folder can carry one.
std::string to_annotated_yaml(const ResolvedConfig& rc);

// {"config": {...}, "derived": {...}, "sources": {...}, "chain": [...]}
nlohmann::json to_json(const ResolvedConfig& rc);

// docs/configs.md's key table, generated from the schema.
std::string schema_markdown();

}  // namespace tessera::arch
