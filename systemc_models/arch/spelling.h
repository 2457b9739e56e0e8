// The "did you mean" of every error message that names an unknown word (a
// config key or name, a kernel, variant or parameter, a choice).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tessera::arch {

// Levenshtein distance between a and b when it is at most `limit`, else
// nullopt; stops as soon as the limit is out of reach, so a long word (a
// fuzzed key of kilobytes) against short candidates costs a length compare.
std::optional<std::size_t> bounded_edit_distance(const std::string& a, const std::string& b, std::size_t limit);

// The candidate closest to `word` (the first of equals), if one is at most
// `limit` edits away.
std::optional<std::string> closest_spelling(const std::string& word, const std::vector<std::string>& candidates,
                                            std::size_t limit);

}  // namespace tessera::arch
