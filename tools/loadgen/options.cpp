#include "tools/loadgen/options.h"

#include <array>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

namespace tern::loadgen {
namespace {

struct Flag {
  std::string_view name;
  char short_name;
  std::string_view value;  // empty: a switch
  std::string_view help;
};

constexpr std::array<Flag, 21> kFlags{{
    {"url", 0, "URL", "server base URL, http://HOST:PORT (default http://127.0.0.1:8000)"},
    {"model", 0, "NAME", "the requests' `model` field (default: the first id of GET /v1/models)"},
    {"api-key", 0, "KEY", "sent as `Authorization: Bearer KEY`"},
    {"endpoint", 0, "KIND",
     "completions (POST /v1/completions, `prompt` a string) or chat (POST /v1/chat/completions, "
     "one user message); default completions"},
    {"concurrency", 'c', "N",
     "clients, each running requests back to back on one keep-alive "
     "connection (default 16)"},
    {"requests", 'n', "N",
     "requests in all (default: the concurrency; in a sweep, twice each "
     "point's concurrency)"},
    {"prompt-words", 0, "W",
     "words per prompt, drawn from a fixed English word list by --seed and the request's "
     "index (default 64)"},
    {"max-tokens", 0, "T", "max_tokens of every request (default 32)"},
    {"temperature", 0, "X", "temperature of every request (default 0)"},
    {"no-ignore-eos", 0, "",
     "leave ignore_eos out (it is sent as true by default, so every "
     "request generates exactly --max-tokens tokens)"},
    {"seed", 0, "S", "seed of the prompt words (default 1)"},
    {"timeout-s", 0, "S", "per-request deadline in seconds, send to [DONE] (default 600)"},
    {"hold", 0, "",
     "connect every client first, then send all first requests at once (a barrier), so "
     "that all of them are open together"},
    {"probe-health-ms", 0, "P",
     "GET /health every P ms on a separate connection during the run and report its "
     "latency (default 0: off)"},
    {"server-pid", 0, "PID",
     "sample VmRSS of PID before the run and every 100 ms during it; "
     "report baseline, peak and KiB per open stream"},
    {"json", 0, "FILE",
     "also write the report as JSON to FILE ('-': stdout, instead of the "
     "table)"},
    {"sweep", 0, "LIST", "run once per concurrency in LIST (e.g. 1,4,16,64), one table row each"},
    {"plot", 0, "FILE.png",
     "with --sweep: draw output tokens/s and TTFT p50/p99 against "
     "concurrency with gnuplot"},
    {"engine", 0, "MODEL_PATH",
     "direct mode: load the model in-process as `tern serve --model` does and run the same "
     "workload without HTTP"},
    {"threads", 0, "T", "direct mode: compute threads (default 0: one per core, as tern serve)"},
    {"help", 'h', "", "print this help"},
}};

Expected<long long> parse_integer(std::string_view flag, std::string_view text, long long min,
                                  long long max) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max) {
    return Error{
        fmt::format("--{}: expected an integer in {}..{}, got '{}'", flag, min, max, text)};
  }
  return value;
}

Expected<double> parse_number(std::string_view flag, std::string_view text, double min) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || !(value >= min)) {
    return Error{fmt::format("--{}: expected a number >= {}, got '{}'", flag, min, text)};
  }
  return value;
}

// http://HOST:PORT[/]; no TLS, no path.
Status parse_url(Options& options, std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return Error{fmt::format("--url: expected http://HOST:PORT, got '{}'", url)};
  }
  std::string_view rest = url.substr(kScheme.size());
  while (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) {
    return Error{fmt::format("--url: a path is not supported, got '{}'", url)};
  }
  const std::size_t colon = rest.rfind(':');
  std::string_view host = colon == std::string_view::npos ? rest : rest.substr(0, colon);
  std::string_view port = colon == std::string_view::npos ? "80" : rest.substr(colon + 1);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.empty()) return Error{fmt::format("--url: no host in '{}'", url)};
  if (auto number = parse_integer("url", port, 1, 65535); !number) return Error{number.error()};
  options.url = std::string(url);
  options.host = std::string(host);
  options.port = std::string(port);
  return {};
}

Status parse_sweep(Options& options, std::string_view list) {
  options.sweep.clear();
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    auto point = parse_integer("sweep", list.substr(0, comma), 1, 1'000'000);
    if (!point) return Error{point.error()};
    options.sweep.push_back(static_cast<int>(*point));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (options.sweep.empty()) return Error{"--sweep: expected a list such as 1,4,16,64"};
  return {};
}

Status apply(Options& options, std::string_view name, std::string_view value) {
  auto integer = [&](int& field, long long min, long long max) -> Status {
    auto parsed = parse_integer(name, value, min, max);
    if (!parsed) return Error{parsed.error()};
    field = static_cast<int>(*parsed);
    return {};
  };
  if (name == "url") return parse_url(options, value);
  if (name == "model") {
    options.model = std::string(value);
  } else if (name == "api-key") {
    options.api_key = std::string(value);
  } else if (name == "endpoint") {
    if (value == "completions") {
      options.endpoint = Endpoint::completions;
    } else if (value == "chat") {
      options.endpoint = Endpoint::chat;
    } else {
      return Error{fmt::format("--endpoint: expected completions or chat, got '{}'", value)};
    }
  } else if (name == "concurrency") {
    return integer(options.concurrency, 1, 1'000'000);
  } else if (name == "requests") {
    options.requests_given = true;
    return integer(options.requests, 1, 100'000'000);
  } else if (name == "prompt-words") {
    return integer(options.prompt_words, 1, 1'000'000);
  } else if (name == "max-tokens") {
    return integer(options.max_tokens, 1, 10'000'000);
  } else if (name == "temperature") {
    auto parsed = parse_number(name, value, 0);
    if (!parsed) return Error{parsed.error()};
    options.temperature = *parsed;
  } else if (name == "no-ignore-eos") {
    options.ignore_eos = false;
  } else if (name == "seed") {
    auto parsed = parse_integer(name, value, 0, INT64_MAX);
    if (!parsed) return Error{parsed.error()};
    options.seed = static_cast<std::uint64_t>(*parsed);
  } else if (name == "timeout-s") {
    auto parsed = parse_number(name, value, 0.001);
    if (!parsed) return Error{parsed.error()};
    options.timeout_s = *parsed;
  } else if (name == "hold") {
    options.hold = true;
  } else if (name == "probe-health-ms") {
    return integer(options.probe_health_ms, 0, 3'600'000);
  } else if (name == "server-pid") {
    return integer(options.server_pid, 1, INT32_MAX);
  } else if (name == "json") {
    options.json_path = std::string(value);
  } else if (name == "sweep") {
    return parse_sweep(options, value);
  } else if (name == "plot") {
    options.plot_path = std::string(value);
  } else if (name == "engine") {
    options.engine_model_path = std::string(value);
  } else if (name == "threads") {
    return integer(options.threads, 0, 4096);
  } else if (name == "help") {
    options.help = true;
  }
  return {};
}

const Flag* find_flag(std::string_view argument) {
  for (const Flag& flag : kFlags) {
    if (argument.starts_with("--") && argument.substr(2) == flag.name) return &flag;
    if (argument.size() == 2 && argument[0] == '-' && flag.short_name != 0 &&
        argument[1] == flag.short_name) {
      return &flag;
    }
  }
  return nullptr;
}

}  // namespace

std::string usage_text() {
  std::string text =
      "usage: tern-loadgen [--url http://HOST:PORT] [-c N] [-n N] [options]\n"
      "       tern-loadgen --engine MODEL_PATH [-c N] [-n N] [options]\n"
      "Streams OpenAI-style requests at a server (or, with --engine, at an in-process engine)\n"
      "and reports TTFT, inter-token and end-to-end latency, throughput and errors.\n\n";
  for (const Flag& flag : kFlags) {
    std::string left = flag.short_name != 0 ? fmt::format("-{}, --{}", flag.short_name, flag.name)
                                            : fmt::format("    --{}", flag.name);
    if (!flag.value.empty()) left += fmt::format(" {}", flag.value);
    // The help column wraps at 100 characters.
    std::string line = fmt::format("  {:<28}", left);
    std::string_view words = flag.help;
    while (!words.empty()) {
      const std::size_t space = words.find(' ');
      const std::string_view word = words.substr(0, space);
      if (line.size() + 1 + word.size() > 100) {
        text += line + "\n";
        line = std::string(30, ' ');
      }
      line += ' ';
      line += word;
      words = space == std::string_view::npos ? std::string_view{} : words.substr(space + 1);
    }
    text += line + "\n";
  }
  return text;
}

Expected<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view argument = argv[i];
    std::string_view inline_value;
    bool has_inline_value = false;
    if (argument.starts_with("--")) {
      if (const std::size_t equals = argument.find('='); equals != std::string_view::npos) {
        inline_value = argument.substr(equals + 1);
        argument = argument.substr(0, equals);
        has_inline_value = true;
      }
    }
    const Flag* flag = find_flag(argument);
    if (flag == nullptr) return Error{fmt::format("unknown option '{}'", argv[i])};
    std::string_view value = inline_value;
    if (flag->value.empty()) {
      if (has_inline_value) return Error{fmt::format("--{} takes no value", flag->name)};
    } else if (!has_inline_value) {
      if (i + 1 >= argc)
        return Error{fmt::format("--{} needs a value {}", flag->name, flag->value)};
      value = argv[++i];
    }
    if (Status applied = apply(options, flag->name, value); !applied) {
      return Error{applied.message()};
    }
  }
  if (!options.plot_path.empty() && options.sweep.empty()) {
    return Error{"--plot needs --sweep"};
  }
  if (!options.requests_given) options.requests = options.concurrency;
  return options;
}

}  // namespace tern::loadgen
