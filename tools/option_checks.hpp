// CLI11 validators for numeric options whose refusals stay readable whatever was typed (a
// 300-digit number is shown cut short, not echoed), and the shortening they use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace CLI {
class Validator;
}

namespace dagrad::cli {

// `text` in quotes, cut to its first characters and its length when it is long.
std::string abbreviated(std::string_view text);

// An integer in [minimum, maximum].
CLI::Validator integer_in(std::int64_t minimum, std::int64_t maximum);
// An unsigned 64-bit integer (a seed).
CLI::Validator unsigned_integer();
// A finite number above zero (a step or a tolerance).
CLI::Validator positive_number();

// Validator functions (CLI::App::check takes them): "" accepts; otherwise the library's own
// message, which lists the accepted values.
std::string check_device(const std::string& text);  // cpu, cuda, cuda:N
std::string check_dtype(const std::string& text);   // any dtype TF names

}  // namespace dagrad::cli
