// Random template fragments, mutated real templates and random bytes: each must parse and render
// to an error or to output, never crash or hang.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"

namespace tern::engine::chat {
namespace {

constexpr const char* kContext =
    R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>x</think>ok", "tool_calls": [{"function":
        {"name": "f", "arguments": {"a": 1}}}]}, {"role": "tool", "content": "r"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "add_generation_prompt": true, "bos_token": "<s>", "xs": [1, 2, 3], "n": 7})";

RenderLimits fuzz_limits() {
  RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_iterations = 20'000;
  limits.max_work_bytes = 32 << 20;
  return limits;
}

// Either outcome is fine; what matters is that we get one.
void render_anything(const std::string& source) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(source, fuzz_limits());
  if (!compiled) {
    EXPECT_EQ(compiled.error().message.rfind("chat template: ", 0), 0u) << compiled.error().message;
    return;
  }
  Expected<std::string> rendered = compiled->render_json(kContext);
  if (!rendered) {
    EXPECT_EQ(rendered.error().message.rfind("chat template: ", 0), 0u) << rendered.error().message;
  }
}

TEST(JinjaRobustness, RandomFragments) {
  const std::vector<std::string> fragments = {
      "{%",
      "%}",
      "{{",
      "}}",
      "{#",
      "#}",
      "{%-",
      "-%}",
      "{{-",
      "-}}",
      " if ",
      " elif ",
      " else ",
      " endif ",
      " for ",
      " in ",
      " endfor ",
      " set ",
      " = ",
      " macro ",
      " endmacro ",
      " call ",
      " endcall ",
      " filter ",
      " endfilter ",
      " raw ",
      " endraw ",
      " break ",
      " continue ",
      "m(",
      "f(",
      "caller()",
      "x",
      "xs",
      "n",
      "messages",
      "message",
      "loop.index",
      "loop.last",
      "ns",
      "namespace(",
      "ns.v",
      "range(",
      "9999",
      "2",
      "0",
      "-1",
      "1.5",
      "'s'",
      "\"t\"",
      "'\\n'",
      "+",
      "-",
      "*",
      "/",
      "//",
      "%",
      "**",
      "~",
      "==",
      "!=",
      "<",
      ">",
      " and ",
      " or ",
      " not ",
      " is ",
      " defined",
      " none",
      " string",
      "|",
      "length",
      "tojson",
      "trim",
      "join",
      "map(attribute='role')",
      "selectattr('role')",
      "items",
      "list",
      "first",
      "sort",
      "[",
      "]",
      "(",
      ")",
      "{",
      "}",
      ":",
      ",",
      ".",
      "[::-1]",
      "content",
      ".split(",
      ".strip()",
      "raise_exception(",
      "\n",
      " ",
      "  ",
      "text",
      "é",
      "🦙",
      "\\",
      "'",
      "\"",
  };
  std::mt19937 rng(1234);
  std::uniform_int_distribution<std::size_t> pick(0, fragments.size() - 1);
  std::uniform_int_distribution<int> length(1, 40);
  for (int round = 0; round < 3000; ++round) {
    std::string source;
    int count = length(rng);
    for (int i = 0; i < count; ++i) source += fragments[pick(rng)];
    render_anything(source);
  }
}

TEST(JinjaRobustness, StructuredRandomTemplates) {
  // Well-formed skeletons with random expressions inside reach the interpreter more often.
  const std::vector<std::string> expressions = {
      "x",
      "xs",
      "n",
      "messages",
      "messages[0]",
      "messages[-1].content",
      "xs|length",
      "xs[::-1]",
      "n * n",
      "n ** 3",
      "'a' * n",
      "xs + xs",
      "range(n)",
      "messages|tojson",
      "tools|map(attribute='function')|list",
      "n // 0",
      "none",
      "ns.v",
      "loop",
      "'x'.split()",
      "messages[2].content.split('</think>')",
      "xs|sum",
      "xs|join(',')",
      "{'a': xs}",
      "[xs, xs]",
      "n if xs else none",
      "x is defined",
      "not xs",
      "xs[1:]",
      "'%'.join(['a'])",
  };
  const std::vector<std::string> skeletons = {
      "{{ E }}",
      "{% if E %}a{% elif E %}b{% else %}c{% endif %}",
      "{% for v in E %}{{ v }}{{ E }}{% endfor %}",
      "{% set ns = namespace(v=E) %}{% for v in E %}{% set ns.v = E %}{% endfor %}{{ ns.v }}",
      "{% macro m(a, b=E) %}{{ a }}{{ b }}{{ E }}{% endmacro %}{{ m(E) }}",
      "{% set s %}{{ E }}{% endset %}{{ s|trim }}",
      "{% for k, v in E %}{{ k }}{% endfor %}",
  };
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::size_t> pick_expression(0, expressions.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_skeleton(0, skeletons.size() - 1);
  for (int round = 0; round < 2000; ++round) {
    std::string source;
    for (int part = 0; part < 3; ++part) {
      std::string skeleton = skeletons[pick_skeleton(rng)];
      for (std::size_t at = skeleton.find('E'); at != std::string::npos; at = skeleton.find('E')) {
        skeleton.replace(at, 1, expressions[pick_expression(rng)]);
      }
      source += skeleton;
    }
    render_anything(source);
  }
}

TEST(JinjaRobustness, MutatedTemplate) {
  const std::string base =
      "{%- for message in messages %}{%- if message.role == 'user' %}{{- '<|u|>' + "
      "message.content|trim }}{%- elif message.tool_calls %}{%- for c in message.tool_calls %}"
      "{{- c.function.arguments|tojson }}{%- endfor %}{%- else %}{{- message['content'] }}"
      "{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|a|>' }}{%- endif %}";
  std::mt19937 rng(7);
  for (int round = 0; round < 3000; ++round) {
    std::string source = base;
    std::uniform_int_distribution<int> edits(1, 4);
    for (int e = edits(rng); e > 0 && !source.empty(); --e) {
      std::uniform_int_distribution<std::size_t> at(0, source.size() - 1);
      std::size_t position = at(rng);
      switch (rng() % 3) {
        case 0:
          source.erase(position, 1 + rng() % 8);
          break;
        case 1:
          source.insert(position, source.substr(at(rng), 1 + rng() % 12));
          break;
        default:
          source[position] = static_cast<char>(rng() % 128);
      }
    }
    render_anything(source);
  }
}

TEST(JinjaRobustness, RandomBytes) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 64);
  for (int round = 0; round < 3000; ++round) {
    std::string source;
    int count = length(rng);
    for (int i = 0; i < count; ++i) {
      // Bias toward the characters that start and end tags.
      int choice = byte(rng);
      source += choice < 40 ? "{%#}-"[choice % 5] : static_cast<char>(byte(rng));
    }
    render_anything(source);
  }
}

}  // namespace
}  // namespace tern::engine::chat
