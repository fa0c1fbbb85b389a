#include "engine/grammar/choice_grammar.h"

#include <utility>
#include <vector>

namespace tern::engine::grammar {

Expected<std::shared_ptr<const Grammar>> compile_choice(std::span<const std::string> choices,
                                                        CompileDeadline deadline) {
  if (choices.empty()) {
    return Error{"choice needs at least one string", ErrorKind::invalid_field};
  }
  GrammarBuilder builder(deadline);
  std::vector<ExprId> alternatives;
  alternatives.reserve(choices.size());
  for (const std::string& choice : choices) {
    if (builder.out_of_time()) return GrammarBuilder::timed_out();
    alternatives.push_back(builder.literal(choice));
  }
  const RuleId root = builder.rule("root");
  builder.define(root, builder.choice(std::move(alternatives)));
  return builder.build(root);
}

}  // namespace tern::engine::grammar
