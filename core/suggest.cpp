// Suggestions for misspelt names: a case-insensitive match first, then Levenshtein distance.
#include "dagrad/core/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace dagrad {
namespace {

// Names longer than this are not compared: the distance costs length squared, and a name so long
// is no typo of a registered one.
constexpr std::size_t kMaxComparedLength = 256;
// At most this many suggestions: a longer list helps no one choose.
constexpr std::size_t kMaxSuggestions = 3;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

// Insertions, deletions and substitutions turning a into b, letters compared ignoring case.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    if (equal_ignoring_case(name, c)) out.push_back(c);
  }
  if (!out.empty() || name.empty() || name.size() > kMaxComparedLength) return out;
  // A third of the name's length: "conv2d" -> "Conv2D" is a case match, "Conv2DBackpropFiter" one
  // letter off is close, and "NoSuchOp" is near nothing.
  const std::size_t allowed = std::max<std::size_t>(1, name.size() / 3);
  std::size_t best = allowed + 1;
  for (const std::string& c : candidates) {
    const std::size_t longer = std::max(name.size(), c.size()), shorter = std::min(name.size(), c.size());
    if (longer - shorter > allowed || c.size() > kMaxComparedLength) continue;
    const std::size_t d = edit_distance(name, c);
    if (d > allowed || d > best) continue;
    if (d < best) out.clear();
    best = d;
    out.push_back(c);
  }
  if (out.size() > kMaxSuggestions) out.resize(kMaxSuggestions);
  return out;
}

std::string did_you_mean(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string text = "; did you mean ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ");
    text += "'" + names[i] + "'";
  }
  return text + "?";
}

}  // namespace dagrad
