#pragma once

// The reference records of ../shared/reference/*.greedy.jsonl (see ../shared/README.md).
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tern::testing {

struct GreedyReference {
  std::vector<std::int32_t> prompt_ids;
  std::vector<std::int32_t> greedy_ids;
  std::vector<std::pair<std::int32_t, double>> last_top10;
  std::vector<double> greedy_margins;
};

inline std::vector<GreedyReference> read_greedy_references(const std::filesystem::path& path) {
  std::vector<GreedyReference> records;
  std::ifstream file(path);
  simdjson::dom::parser parser;
  for (std::string line; std::getline(file, line);) {
    if (line.empty()) continue;
    simdjson::dom::element record = parser.parse(line);
    GreedyReference reference;
    for (std::int64_t id : record["prompt_ids"].get_array()) {
      reference.prompt_ids.push_back(static_cast<std::int32_t>(id));
    }
    for (std::int64_t id : record["greedy_ids"].get_array()) {
      reference.greedy_ids.push_back(static_cast<std::int32_t>(id));
    }
    for (simdjson::dom::element pair : record["last_top10"].get_array()) {
      const auto entry = pair.get_array();
      reference.last_top10.emplace_back(static_cast<std::int32_t>(std::int64_t(entry.at(0))),
                                        double(entry.at(1)));
    }
    for (double margin : record["greedy_margins"].get_array()) {
      reference.greedy_margins.push_back(margin);
    }
    records.push_back(std::move(reference));
  }
  return records;
}

// Below this top-1 minus top-2 reference margin a float32 implementation may legitimately pick
// the other token (../shared/README.md).
inline constexpr double kNearTieMargin = 0.002;

// Greedy steps that must match the reference exactly: all of them up to and including the
// first near tie.
inline std::size_t steps_to_compare(const GreedyReference& reference) {
  std::size_t steps = reference.greedy_ids.size();
  for (std::size_t i = 0; i < reference.greedy_margins.size() && i < steps; ++i) {
    if (reference.greedy_margins[i] < kNearTieMargin) return i + 1;
  }
  return steps;
}

// The quantized models' rules over the 8 reference prompts: the reference is float64 math on
// the file's dequantized weights, and tern also quantizes activations, so only most prompts must
// agree on the first token (the argmax of the last prompt position) and on the first 8 ids.
struct QuantizedAgreement {
  static constexpr int kMinTop1Matches = 7;
  static constexpr int kMinFirst8Matches = 6;

  int top1_matches = 0;
  int first8_matches = 0;

  void add(const GreedyReference& reference, std::int32_t top1,
           const std::vector<std::int32_t>& greedy_ids) {
    top1_matches += top1 == reference.last_top10.front().first;
    const std::size_t first = std::min<std::size_t>(8, reference.greedy_ids.size());
    first8_matches += greedy_ids.size() >= first &&
                      std::equal(reference.greedy_ids.begin(),
                                 reference.greedy_ids.begin() + static_cast<std::ptrdiff_t>(first),
                                 greedy_ids.begin());
  }
};

}  // namespace tern::testing
