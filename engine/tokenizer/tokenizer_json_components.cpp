#include "engine/tokenizer/tokenizer_json_components.h"

#include <fmt/format.h>

#include "engine/tokenizer/json_fields.h"

namespace tern::engine::tokenizer_json {

namespace {

using json_fields::bool_field;
using json_fields::field;
using json_fields::int_field;
using json_fields::string_field;
using simdjson::dom::element;

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

Error unsupported(std::string_view what, std::string_view type) {
  return Error{fmt::format("unsupported {} type '{}'", what, type)};
}

// A Split/Replace "pattern": {"String": "..."} or {"Regex": "..."}, as a compiled regex.
Expected<std::shared_ptr<const Regex>> pattern_regex(element pattern) {
  if (const auto literal = string_field(pattern, "String")) {
    return Regex::compile(regex_escape(*literal));
  }
  if (const auto regex = string_field(pattern, "Regex")) return Regex::compile(std::string(*regex));
  return Error{"pattern is neither {\"String\"} nor {\"Regex\"}"};
}

Expected<SplitBehavior> split_behavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return Error{fmt::format("unknown split behavior '{}'", name)};
}

Status add_split(PreTokenizer& pre_tokenizer, const std::string& pattern, SplitBehavior behavior,
                 bool invert) {
  auto regex = Regex::compile(pattern);
  if (!regex) return regex.error();
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kSplit;
  step.regex = std::move(regex.value());
  step.behavior = behavior;
  step.invert = invert;
  pre_tokenizer.add(std::move(step));
  return {};
}

}  // namespace

Status parse_normalizer(element node, Normalizer& normalizer) {
  const auto type = string_field(node, "type").value_or("");
  if (type == "Sequence") {
    simdjson::dom::array children;
    if (node["normalizers"].get_array().get(children) != simdjson::SUCCESS) {
      return Error{"normalizer Sequence without a normalizers list"};
    }
    for (element child : children) {
      if (Status status = parse_normalizer(child, normalizer); !status) return status;
    }
    return {};
  }
  NormalizerStep step;
  if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNfc;
  } else if (type == "Lowercase") {
    step.kind = NormalizerStep::Kind::kLowercase;
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.text = std::string(string_field(node, "prepend").value_or(""));
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.strip_left = bool_field(node, "strip_left", true);
    step.strip_right = bool_field(node, "strip_right", true);
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    step.text = std::string(string_field(node, "content").value_or(""));
    const auto pattern = field(node, "pattern");
    if (!pattern) return Error{"Replace normalizer without a pattern"};
    if (const auto literal = string_field(*pattern, "String")) {
      step.pattern = std::string(*literal);
    } else {
      auto regex = pattern_regex(*pattern);
      if (!regex) return regex.error();
      step.regex = std::move(regex.value());
    }
  } else {
    return unsupported("normalizer", type);
  }
  normalizer.add(std::move(step));
  return {};
}

Status parse_pre_tokenizer(element node, PreTokenizer& pre_tokenizer, bool& byte_level) {
  const auto type = string_field(node, "type").value_or("");
  if (type == "Sequence") {
    simdjson::dom::array children;
    if (node["pretokenizers"].get_array().get(children) != simdjson::SUCCESS) {
      return Error{"pre_tokenizer Sequence without a pretokenizers list"};
    }
    for (element child : children) {
      if (Status status = parse_pre_tokenizer(child, pre_tokenizer, byte_level); !status) {
        return status;
      }
    }
    return {};
  }
  if (type == "Split") {
    const auto pattern = field(node, "pattern");
    if (!pattern) return Error{"Split pre_tokenizer without a pattern"};
    std::string regex;
    if (const auto literal = string_field(*pattern, "String")) {
      regex = regex_escape(*literal);
    } else if (const auto expression = string_field(*pattern, "Regex")) {
      regex = std::string(*expression);
    } else {
      return Error{"Split pattern is neither {\"String\"} nor {\"Regex\"}"};
    }
    auto behavior = split_behavior(string_field(node, "behavior").value_or("Isolated"));
    if (!behavior) return behavior.error();
    return add_split(pre_tokenizer, regex, *behavior, bool_field(node, "invert", false));
  }
  if (type == "ByteLevel") {
    byte_level = true;
    if (bool_field(node, "add_prefix_space", false)) {
      pre_tokenizer.add({.kind = PreTokenizerStep::Kind::kPrefixSpace});
    }
    if (bool_field(node, "use_regex", true)) {
      return add_split(pre_tokenizer, kGpt2SplitPattern, SplitBehavior::kIsolated, false);
    }
    return {};
  }
  if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = std::string(string_field(node, "replacement").value_or(kSentencePieceSpace));
    const auto scheme = string_field(node, "prepend_scheme");
    if (scheme == "first") {
      step.prepend_scheme = PrependScheme::kFirst;
    } else if (scheme == "never" || (!scheme && !bool_field(node, "add_prefix_space", true))) {
      step.prepend_scheme = PrependScheme::kNever;
    }
    step.split = bool_field(node, "split", true);
    pre_tokenizer.add(std::move(step));
    return {};
  }
  if (type == "Digits") {
    const bool individual = bool_field(node, "individual_digits", false);
    return add_split(pre_tokenizer, individual ? "\\p{N}" : "\\p{N}+", SplitBehavior::kIsolated,
                     false);
  }
  if (type == "Whitespace") {
    return add_split(pre_tokenizer, "\\w+|[^\\w\\s]+", SplitBehavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") {
    return add_split(pre_tokenizer, "\\s+", SplitBehavior::kRemoved, false);
  }
  return unsupported("pre_tokenizer", type);
}

Status parse_decoder(element node, Decoder& decoder, bool& fused) {
  const auto type = string_field(node, "type").value_or("");
  if (type == "Sequence") {
    simdjson::dom::array children;
    if (node["decoders"].get_array().get(children) != simdjson::SUCCESS) {
      return Error{"decoder Sequence without a decoders list"};
    }
    for (element child : children) {
      if (Status status = parse_decoder(child, decoder, fused); !status) return status;
    }
    return {};
  }
  if (type == "ByteLevel") {
    decoder.add_token_step({.kind = DecoderStep::Kind::kByteLevel});
  } else if (type == "ByteFallback") {
    decoder.add_token_step({.kind = DecoderStep::Kind::kByteFallback});
  } else if (type == "Fuse") {
    fused = true;
  } else if (type == "Replace") {
    const auto pattern = field(node, "pattern");
    const auto literal = pattern ? string_field(*pattern, "String") : std::nullopt;
    if (!literal) return Error{"Replace decoder supports only a {\"String\"} pattern"};
    decoder.add_token_step({.kind = DecoderStep::Kind::kReplace,
                            .pattern = std::string(*literal),
                            .content = std::string(string_field(node, "content").value_or(""))});
  } else if (type == "Strip") {
    const std::string content(string_field(node, "content").value_or(" "));
    const auto start = static_cast<std::size_t>(int_field(node, "start").value_or(0));
    const auto stop = static_cast<std::size_t>(int_field(node, "stop").value_or(0));
    if (fused && content == " ") {
      // Trailing strips of the whole output cannot stream; no shipped tokenizer uses them.
      decoder.set_strip_leading_spaces(start);
    } else {
      decoder.add_token_step(
          {.kind = DecoderStep::Kind::kStrip, .content = content, .start = start, .stop = stop});
    }
  } else if (type == "Metaspace") {
    const std::string replacement(string_field(node, "replacement").value_or(kSentencePieceSpace));
    decoder.add_token_step(
        {.kind = DecoderStep::Kind::kReplace, .pattern = replacement, .content = " "});
    const auto scheme = string_field(node, "prepend_scheme");
    const bool prepends = scheme ? *scheme != "never" : bool_field(node, "add_prefix_space", true);
    if (prepends) decoder.set_strip_leading_spaces(1);
  } else {
    return unsupported("decoder", type);
  }
  return {};
}

}  // namespace tern::engine::tokenizer_json
