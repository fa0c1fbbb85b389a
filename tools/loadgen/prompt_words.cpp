#include "tools/loadgen/prompt_words.h"

#include <array>
#include <string_view>

namespace tern::loadgen {
namespace {

constexpr std::array<std::string_view, 128> kWords{{
    "the",      "little", "girl",   "boy",    "dog",     "cat",     "park",   "tree",    "happy",
    "sad",      "big",    "small",  "red",    "blue",    "green",   "sun",    "moon",    "star",
    "house",    "garden", "flower", "bird",   "fish",    "river",   "ball",   "toy",     "friend",
    "mom",      "dad",    "day",    "night",  "time",    "once",    "upon",   "played",  "ran",
    "jumped",   "saw",    "found",  "made",   "wanted",  "liked",   "said",   "looked",  "went",
    "came",     "gave",   "took",   "had",    "was",     "very",    "and",    "but",     "so",
    "then",     "with",   "in",     "on",     "under",   "over",    "near",   "far",     "a",
    "an",       "one",    "two",    "three",  "many",    "some",    "all",    "every",   "bright",
    "dark",     "warm",   "cold",   "soft",   "loud",    "quiet",   "fast",   "slow",    "kind",
    "brave",    "funny",  "shiny",  "old",    "new",     "apple",   "cake",   "milk",    "box",
    "book",     "hat",    "shoe",   "car",    "boat",    "train",   "rain",   "snow",    "wind",
    "hill",     "road",   "door",   "window", "bed",     "chair",   "table",  "school",  "teacher",
    "story",    "song",   "game",   "smile",  "laughed", "helped",  "shared", "learned", "lesson",
    "together", "always", "never",  "today",  "morning", "evening", "forest", "lake",    "pond",
    "frog",     "bear",
}};

// SplitMix64: small, fast and well mixed; the sequence is fixed for a given state.
std::uint64_t next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::string make_prompt(std::uint64_t seed, std::uint64_t request_index, int words) {
  std::uint64_t state = seed * 0x100000001b3ull ^ (request_index + 1) * 0xd6e8feb86659fd93ull;
  std::string prompt;
  prompt.reserve(static_cast<std::size_t>(words) * 7);
  for (int i = 0; i < words; ++i) {
    if (i > 0) prompt += ' ';
    prompt += kWords[next(state) % kWords.size()];
  }
  return prompt;
}

}  // namespace tern::loadgen
