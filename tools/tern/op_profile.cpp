#include "tools/tern/op_profile.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tern::tools {

void print_op_profile(std::string_view title, std::span<const engine::OpTime> ops, int passes,
                      double wall_seconds) {
  struct Group {
    std::string name;
    int calls = 0;
    double seconds = 0;
  };
  std::map<std::string, Group> groups;
  double total = 0;
  for (const engine::OpTime& op : ops) {
    std::string name = op.operand.empty() ? op.op : op.op + " " + op.operand;
    if (op.layer == engine::OpTime::kNoLayer && op.op != "embed") name += " (head)";
    Group& group = groups[name];
    group.name = name;
    ++group.calls;
    group.seconds += op.seconds;
    total += op.seconds;
  }
  std::vector<Group> sorted;
  for (auto& [name, group] : groups) sorted.push_back(group);
  std::ranges::sort(sorted, [](const Group& a, const Group& b) { return a.seconds > b.seconds; });
  const double per_pass = 1.0 / std::max(1, passes);
  fmt::print("\nop profile, {} ({} pass{}):\n\n", title, passes, passes == 1 ? "" : "es");
  fmt::print("| op | calls / pass | ms / pass | share | us / call |\n");
  fmt::print("| --- | ---: | ---: | ---: | ---: |\n");
  for (const Group& group : sorted) {
    fmt::print("| {} | {:.0f} | {:.3f} | {:.1f}% | {:.1f} |\n", group.name, group.calls * per_pass,
               1e3 * group.seconds * per_pass, total > 0 ? 100.0 * group.seconds / total : 0.0,
               1e6 * group.seconds / std::max(1, group.calls));
  }
  fmt::print(
      "\nthe ops took {:.3f} ms per pass; the passes {:.3f} ms on the host's clock ({:.1f}% in no "
      "op: launches, gaps between ops, the host's own work)\n",
      1e3 * total * per_pass, 1e3 * wall_seconds * per_pass,
      wall_seconds > 0 ? 100.0 * std::max(0.0, wall_seconds - total) / wall_seconds : 0.0);
}

}  // namespace tern::tools
