// Compiled into every program of a DAGRAD_SANITIZE build: a sanitizer report ends the process
// with SIGABRT. With the runtimes' defaults a report exits with status 1, the same status the
// dagrad CLI uses for a dagrad::Error, so a test that expects "error, exit 1" could pass over one.
// The environment (ASAN_OPTIONS, UBSAN_OPTIONS) still overrides these.
extern "C" {
const char* __asan_default_options() { return "abort_on_error=1:halt_on_error=1:detect_leaks=1"; }
const char* __ubsan_default_options() { return "abort_on_error=1:halt_on_error=1:print_stacktrace=1"; }
}
