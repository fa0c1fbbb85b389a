#include "service/chat_output_parsers.h"

#include <limits>

#include <algorithm>

#include "engine/chat/marker_scanner.h"
#include "engine/tokenizer/tokenizer.h"
#include "service/api/tool_values.h"

namespace tern::service {
namespace {

std::string configured_or(const std::string& configured, const std::string& from_template) {
  if (configured == "none") return {};
  return configured.empty() ? from_template : configured;
}

bool ends_in_think(std::string_view prompt) {
  while (!prompt.empty() && engine::chat::is_space(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with("<think>");
}

}  // namespace

OutputParserSpec output_parsers_for(const engine::ServedModel& model,
                                    const api::ChatRequest& request, std::string_view prompt) {
  const engine::ModelChatTemplate& chat_template = *model.chat_template;
  return output_parsers_for(
      request, configured_or(model.spec.tool_parser, chat_template.tool_call_parser()),
      configured_or(model.spec.reasoning_parser, chat_template.reasoning_parser()), prompt);
}

OutputParserSpec output_parsers_for(const api::ChatRequest& request, std::string tool_parser,
                                    std::string reasoning_parser, std::string_view prompt) {
  OutputParserSpec spec;
  spec.reasoning_parser = std::move(reasoning_parser);
  spec.starts_in_reasoning = !spec.reasoning_parser.empty() && ends_in_think(prompt);
  if (!request.tools.is_undefined() && request.tool_choice != api::ToolChoice::none) {
    spec.tool_parser = std::move(tool_parser);
    if (!spec.tool_parser.empty()) spec.tool_names = api::function_names(request.tools);
    if (!request.parallel_tool_calls) spec.max_tool_calls = 1;
  }
  return spec;
}

std::vector<std::int32_t> parser_marker_tokens(const engine::Tokenizer& tokenizer,
                                               const OutputParserSpec& spec) {
  std::vector<std::int32_t> tokens;
  for (const std::string& parser : {spec.tool_parser, spec.reasoning_parser}) {
    for (const std::string_view marker : engine::chat::parser_markers(parser)) {
      const std::vector<std::int32_t> ids = tokenizer.encode(marker, false);
      if (ids.size() == 1 && tokenizer.is_special(ids[0])) tokens.push_back(ids[0]);
    }
  }
  std::ranges::sort(tokens);
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  return tokens;
}

engine::ReasoningBudget reasoning_budget_for(const engine::Tokenizer& tokenizer,
                                             const OutputParserSpec& spec,
                                             std::optional<int> budget_tokens, bool constrained) {
  engine::ReasoningBudget budget;
  if (spec.reasoning_parser.empty()) return budget;
  // A constrained answer follows the reasoning: the engine tracks where reasoning ends even
  // without a cap on it.
  if (!budget_tokens && !constrained) return budget;
  const std::vector<std::int32_t> open = tokenizer.encode("<think>", false);
  const std::vector<std::int32_t> close = tokenizer.encode("</think>", false);
  if (close.size() != 1) return budget;
  budget.max_tokens = budget_tokens.value_or(std::numeric_limits<std::int32_t>::max());
  budget.starts_in_reasoning = spec.starts_in_reasoning;
  budget.open_token = open.size() == 1 ? open[0] : -1;
  budget.close_token = close[0];
  // As Qwen3's and DeepSeek-R1's templates close a turn's reasoning.
  budget.close_tokens = tokenizer.encode("\n</think>\n\n", false);
  if (std::ranges::find(budget.close_tokens, close[0]) == budget.close_tokens.end()) {
    budget.close_tokens = close;  // the newlines merged into the marker: force it alone
  }
  return budget;
}

}  // namespace tern::service
