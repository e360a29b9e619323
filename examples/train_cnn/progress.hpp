// Progress within an epoch: done/total, images per second and the running loss. On a terminal a
// one-line bar redrawn at most a few times per second; in a log file or a pipe a plain line at
// each tenth of the epoch (no carriage returns to garble it); with --quiet nothing.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

namespace train_cnn {

template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

enum class ProgressStyle { Bar, Lines, Quiet };

// Bar where `stream` is a terminal, Lines elsewhere, Quiet when asked.
inline ProgressStyle progress_style(bool quiet, std::FILE* stream) {
  if (quiet) return ProgressStyle::Quiet;
  return ::isatty(::fileno(stream)) ? ProgressStyle::Bar : ProgressStyle::Lines;
}

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, std::int64_t total, std::string label, ProgressStyle style = ProgressStyle::Bar)
      : out_(out), total_(total), label_(std::move(label)), style_(style), start_(Clock::now()), last_(start_) {}

  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // An epoch cut short by an error ends its line, so the error message starts a line of its own.
  ~ProgressBar() {
    if (open_) out_ << "\n";
  }

  void update(std::int64_t done, double running_loss) {
    if (style_ == ProgressStyle::Lines) {
      // A line as each tenth of the epoch is passed; the epoch's own summary line follows its end.
      const std::int64_t tenth = total_ > 0 ? done * 10 / total_ : 10;
      if (tenth > tenths_printed_ && done < total_) {
        tenths_printed_ = tenth;
        out_ << label_ << ": " << done << "/" << total_ << " images  " << rate(done) << " img/s  loss "
             << str(std::fixed, running_loss).substr(0, 6) << std::endl;
      }
      return;
    }
    if (style_ != ProgressStyle::Bar) return;
    const auto now = Clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    draw(done, running_loss);
  }
  void finish(std::int64_t done, double running_loss) {
    if (style_ != ProgressStyle::Bar) return;
    draw(done, running_loss);
    out_ << "\n";
    open_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;

  long long rate(std::int64_t done) const {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return static_cast<long long>(seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
  }

  void draw(std::int64_t done, double loss) {
    open_ = true;
    constexpr int kWidth = 30;
    const double fraction = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
    out_ << "\r" << label_ << " [" << bar << "] " << done << "/" << total_ << "  " << rate(done) << " img/s  loss "
         << str(std::fixed, loss).substr(0, 6) << std::flush;
  }

  std::ostream& out_;
  std::int64_t total_;
  std::string label_;
  ProgressStyle style_;
  Clock::time_point start_, last_;
  std::int64_t tenths_printed_ = 0;
  bool open_ = false;  // a bar is drawn and its line not ended
};

}  // namespace train_cnn
