// "Did you mean ...?": the registered names closest to a misspelt one, for NotFound errors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dagrad {

// The candidates that `name` most likely meant, best first: those equal to it ignoring case;
// else those within a small edit distance (about a third of the name's length, ignoring case),
// the nearest ones only. Empty when nothing is close.
std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates);

// "; did you mean 'A'?" or "; did you mean 'A' or 'B'?" for those names, or "" when there are none.
std::string did_you_mean(const std::vector<std::string>& names);

}  // namespace dagrad
