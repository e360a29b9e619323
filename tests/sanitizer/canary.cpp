// Checks that the sanitizer build really stops at a report: a child process commits signed
// overflow (UBSan) or a heap overflow (ASan) and must die by SIGABRT before it can print "survived".
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

volatile int int_max = INT_MAX;

void signed_overflow() { std::printf("%d\n", int_max + 1); }

void heap_overflow() {
  char* bytes = new char[8];
  volatile int index = 8;
  bytes[index] = 1;
  delete[] bytes;
}

// Runs `bug` in a child; true when the child was killed by SIGABRT.
bool aborted(const char* name, void (*bug)()) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    bug();
    std::printf("%s: survived\n", name);
    std::fflush(nullptr);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  const bool ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  std::printf("%s: %s\n", name,
              ok ? "aborted, as it must" : "did NOT abort: sanitizer reports would not fail the tests");
  return ok;
}

}  // namespace

int main() {
  const bool ubsan = aborted("signed overflow (UBSan)", signed_overflow);
  const bool asan = aborted("heap overflow (ASan)", heap_overflow);
  return ubsan && asan ? 0 : 1;
}
