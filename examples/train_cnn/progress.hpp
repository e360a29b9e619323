// A one-line progress bar for an epoch: done/total, images per second and the running loss,
// redrawn at most a few times per second.
#pragma once

#include <chrono>
#include <cstdint>
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

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, std::int64_t total, std::string label)
      : out_(out), total_(total), label_(std::move(label)), start_(Clock::now()), last_(start_) {}

  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // An epoch cut short by an error ends its line, so the error message starts a line of its own.
  ~ProgressBar() {
    if (open_) out_ << "\n";
  }

  void update(std::int64_t done, double running_loss) {
    const auto now = Clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    draw(done, running_loss);
  }
  void finish(std::int64_t done, double running_loss) {
    draw(done, running_loss);
    out_ << "\n";
    open_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;

  void draw(std::int64_t done, double loss) {
    open_ = true;
    constexpr int kWidth = 30;
    const double fraction = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
    const int filled = static_cast<int>(fraction * kWidth);
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string bar(static_cast<std::size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
    out_ << "\r" << label_ << " [" << bar << "] " << done << "/" << total_ << "  "
         << static_cast<long long>(seconds > 0 ? static_cast<double>(done) / seconds : 0.0) << " img/s  loss "
         << str(std::fixed, loss).substr(0, 6) << std::flush;
  }

  std::ostream& out_;
  std::int64_t total_;
  std::string label_;
  Clock::time_point start_, last_;
  bool open_ = false;  // a bar is drawn and its line not ended
};

}  // namespace train_cnn
