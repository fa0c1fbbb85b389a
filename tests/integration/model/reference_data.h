#pragma once

// The reference records of ../shared/reference/*.greedy.jsonl (see ../shared/README.md).
#include <simdjson.h>

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

}  // namespace tern::testing
