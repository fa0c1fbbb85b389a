#include "tools/loadgen/sweep_plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

namespace tern::loadgen {
namespace {

bool on_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::filesystem::path candidate =
        std::filesystem::path(std::string(dirs.substr(0, colon))) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
  }
  return false;
}

// gnuplot's single-quoted string: a quote is doubled.
std::string gnuplot_string(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace

Status plot_sweep(const std::vector<Summary>& points, const std::string& png_path) {
  if (!on_path("gnuplot")) {
    return Error{
        "--plot needs gnuplot, which is not on PATH: install the Debian package "
        "gnuplot-nox (scripts/setup.sh does)"};
  }
  std::string script = "$sweep << EOD\n";
  for (const Summary& s : points) {
    script += fmt::format("{} {:.3f} {:.3f} {:.3f}\n", s.run->concurrency, s.output_tokens_per_s,
                          s.ttft_ms.p50, s.ttft_ms.p99);
  }
  script += "EOD\n";
  script += fmt::format("set terminal pngcairo size 1400,560 font ',11'\nset output {}\n",
                        gnuplot_string(png_path));
  script +=
      "set multiplot layout 1,2 title 'tern-loadgen sweep'\n"
      "set logscale x 2\nset grid\nset xlabel 'concurrency'\nset key top left\n"
      "set ylabel 'output tokens/s'\nset yrange [0:*]\n"
      "plot $sweep using 1:2 with linespoints lw 2 pt 7 title 'output tokens/s'\n"
      "set ylabel 'TTFT ms'\n"
      "plot $sweep using 1:3 with linespoints lw 2 pt 7 title 'TTFT p50', "
      "$sweep using 1:4 with linespoints lw 2 pt 5 title 'TTFT p99'\n"
      "unset multiplot\nset output\n";
  FILE* gnuplot = ::popen("gnuplot", "w");
  if (gnuplot == nullptr) return Error{"cannot start gnuplot"};
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  const int status = ::pclose(gnuplot);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{fmt::format("gnuplot failed writing {} (its messages are above)", png_path)};
  }
  return {};
}

}  // namespace tern::loadgen
