// World: MPI's initialisation and finalisation, the communicator, errors as dagrad::Errors, and
// the helpers data-parallel training needs outside the graph (broadcast of the variables).
#include "dagrad/backends/mpi/world.hpp"

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "dagrad/backends/mpi/communicator.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad::mpi {
namespace {

const World* g_world = nullptr;
MPI_Comm g_comm = MPI_COMM_NULL;
double g_timeout_seconds = 300;
bool g_broken = false;  // an exchange timed out: MPI may still be using its buffers

// DAGRAD_MPI_TIMEOUT, when set: a positive number of seconds.
double timeout_from_environment(double fallback) {
  const char* text = std::getenv("DAGRAD_MPI_TIMEOUT");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(seconds) || seconds <= 0) {
    const std::string shown = std::strlen(text) > 40 ? std::string(text, 40) + "..." : std::string(text);
    invalid_argument("DAGRAD_MPI_TIMEOUT: expected a positive number of seconds, got '", shown, "'");
  }
  return seconds;
}

void rank_and_size(int& rank, int& size) {
  rank = -1;
  size = 0;
  if (g_comm != MPI_COMM_NULL) {
    MPI_Comm_rank(g_comm, &rank);
    MPI_Comm_size(g_comm, &size);
  }
}

}  // namespace

MPI_Comm communicator_for(const std::string& key) {
  static auto& made = *new std::map<std::string, MPI_Comm>;  // freed by MPI_Finalize
  static std::mutex lock;
  const std::lock_guard<std::mutex> guard(lock);
  const auto it = made.find(key);
  if (it != made.end()) return it->second;
  require_unbroken("MPI_Comm_idup");
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Comm_idup(g_comm, &comm, &request), "MPI_Comm_idup");
  wait_for(request, "MPI_Comm_idup for " + key);
  check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return made.emplace(key, comm).first->second;
}

void check(int rc, std::string_view call) {
  if (rc == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, message, &length) != MPI_SUCCESS) length = 0;
  int rank = 0, size = 0;
  rank_and_size(rank, size);
  fail(Code::Internal, call, " failed on rank ", rank, " of ", size, ": ", std::string_view(message, length));
}

void require_unbroken(std::string_view call) {
  if (!g_broken) return;
  int rank = 0, size = 0;
  rank_and_size(rank, size);
  fail(Code::FailedPrecondition, call, " on rank ", rank, " of ", size,
       ": an earlier exchange of this process timed out, so MPI cannot be used again; end the process");
}

void wait_for(MPI_Request& request, std::string_view call) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(g_timeout_seconds);
  for (int polls = 1;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
    if (done) return;
    if (polls % 64 != 0) continue;  // the clock and the scheduler cost more than a poll
    if (Clock::now() > deadline) {
      g_broken = true;
      int rank = 0, size = 0;
      rank_and_size(rank, size);
      fail(Code::Internal, call, " timed out on rank ", rank, " of ", size, " after ", g_timeout_seconds,
           " s waiting for the other processes (one is stuck or gone; DAGRAD_MPI_TIMEOUT sets the limit)");
    }
    std::this_thread::yield();
  }
}

void abandon(std::vector<std::byte> buffer) {
  static std::mutex lock;
  static auto* kept = new std::vector<std::vector<std::byte>>;  // never freed: MPI may write into them
  const std::lock_guard<std::mutex> guard(lock);
  kept->push_back(std::move(buffer));
}

int mpi_count(std::int64_t count, std::string_view what) {
  if (count < 0 || count > INT_MAX) {
    fail(Code::OutOfRange, what, ": ", count, " elements are more than one MPI call takes (", INT_MAX, ")");
  }
  return static_cast<int>(count);
}

MPI_Datatype mpi_type(DType dtype) {
  // const, not constexpr: Open MPI's datatype handles are addresses cast through void*.
  static const struct {
    DType dtype;
    MPI_Datatype type;
  } kTable[] = {{DType::Float32, MPI_FLOAT},
                {DType::Float64, MPI_DOUBLE},
                {DType::Int32, MPI_INT32_T},
                {DType::Int64, MPI_INT64_T}};
  for (const auto& row : kTable) {
    if (row.dtype == dtype) return row.type;
  }
  fail(Code::Unimplemented, "mpi: no MPI datatype for ", dtype_name(dtype));
}

World::World(int* argc, char*** argv) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (g_world != nullptr || initialized) fail(Code::FailedPrecondition, "mpi::World: MPI is already initialised");
  g_timeout_seconds = timeout_from_environment(g_timeout_seconds);  // before MPI starts: a bad value ends no job
  // Kernels run on the session's worker threads, one collective at a time (minimize chains them).
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    fail(Code::FailedPrecondition, "mpi::World: this MPI does not offer MPI_THREAD_SERIALIZED");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(g_comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(g_comm, &size_), "MPI_Comm_size");
  static const bool registered = (register_kernels(), true);
  (void)registered;
  g_world = this;
}

World::~World() {
  g_world = nullptr;
  // See the class comment; a timed-out exchange may still be pending, which MPI_Finalize would wait for.
  if ((std::uncaught_exceptions() > 0 && size_ > 1) || g_broken) return;
  MPI_Comm_free(&g_comm);
  g_comm = MPI_COMM_NULL;
  MPI_Finalize();
}

double World::timeout_seconds() const { return g_timeout_seconds; }

void World::set_timeout_seconds(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    invalid_argument("mpi::World: the timeout must be a positive number of seconds, got ", seconds);
  }
  g_timeout_seconds = seconds;
}

namespace {

// Waits for `request`; if that fails, MPI may still use `buffer`, which is left behind (abandon).
void wait_or_abandon(MPI_Request& request, const std::string& call, std::vector<std::byte>& buffer) {
  try {
    wait_for(request, call);
  } catch (...) {
    abandon(std::move(buffer));
    throw;
  }
}

// MPI_Ibcast of `bytes` from process 0 into every process's `bytes`, through a buffer of its own
// that a timed-out broadcast leaves behind (abandon).
void broadcast_bytes(void* bytes, std::size_t count, const std::string& call) {
  require_unbroken(call);
  std::vector<std::byte> buffer(count);
  if (count > 0) std::memcpy(buffer.data(), bytes, count);  // memcpy takes no null pointer, even for 0 bytes
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibcast(buffer.data(), mpi_count(static_cast<std::int64_t>(count), call), MPI_BYTE, 0, g_comm, &request),
        call);
  wait_or_abandon(request, call, buffer);
  if (count > 0) std::memcpy(bytes, buffer.data(), count);
}

// Every process's `bytes` bytes at `mine`, in rank order (`processes` of them), through a buffer
// of its own that a timed-out call leaves behind (abandon).
std::vector<std::byte> all_gather_bytes(const void* mine, std::size_t bytes, int processes, const std::string& call) {
  require_unbroken(call);
  const int count = mpi_count(static_cast<std::int64_t>(bytes), call);
  const std::size_t received = checked_bytes(static_cast<std::int64_t>(processes), bytes, call);
  // The bytes received, then the ones sent: MPI may use both until the call completes.
  std::vector<std::byte> buffer(received + bytes);
  if (bytes > 0) std::memcpy(buffer.data() + received, mine, bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(buffer.data() + received, count, MPI_BYTE, buffer.data(), count, MPI_BYTE, g_comm, &request),
        call);
  wait_or_abandon(request, call, buffer);
  buffer.resize(received);
  return buffer;
}

}  // namespace

void World::broadcast_variables(Session& session, const layers::VariableSet& vars) const {
  VariableStore& store = session.variables();
  for (const Output& var : vars.all()) {
    const std::string& name = var.op().name;
    Tensor value = store.get(name).clone();  // FailedPrecondition when the initializer has not run
    broadcast_bytes(value.raw_data(), value.nbytes(), "MPI_Ibcast of " + name);  // any dtype, as bytes
    store.set(name, std::move(value));
  }
}

std::vector<std::uint64_t> World::all_gather(std::uint64_t value) const {
  const std::vector<std::byte> all = all_gather_bytes(&value, sizeof value, size_, "MPI_Iallgather");
  std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
  std::memcpy(values.data(), all.data(), all.size());
  return values;
}

std::vector<double> World::all_gather(const std::vector<double>& values) const {
  const std::vector<std::uint64_t> counts = all_gather(static_cast<std::uint64_t>(values.size()));
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] != counts[0]) {
      fail(Code::InvalidArgument, "mpi::World::all_gather: rank ", r, " gives ", counts[r], " values but rank 0 gives ",
           counts[0], "; every rank must give as many");
    }
  }
  const std::size_t bytes = checked_bytes(static_cast<std::int64_t>(values.size()), sizeof(double), "all_gather");
  const std::vector<std::byte> all = all_gather_bytes(values.data(), bytes, size_, "MPI_Iallgather of doubles");
  std::vector<double> out(values.size() * counts.size());
  if (!all.empty()) std::memcpy(out.data(), all.data(), all.size());  // no null pointers to memcpy
  return out;
}

std::string World::broadcast(const std::string& bytes) const {
  std::uint64_t size = bytes.size();
  broadcast_bytes(&size, sizeof size, "MPI_Ibcast of a size");
  mpi_count(static_cast<std::int64_t>(size), "mpi::World::broadcast");  // refuses sizes MPI cannot send
  std::string out = rank_ == 0 ? bytes : std::string(static_cast<std::size_t>(size), '\0');
  broadcast_bytes(out.data(), out.size(), "MPI_Ibcast of bytes");
  return out;
}

void World::barrier() const {
  require_unbroken("MPI_Ibarrier");
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(g_comm, &request), "MPI_Ibarrier");
  wait_for(request, "MPI_Ibarrier");
}

const World& world() {
  if (g_world == nullptr) fail(Code::FailedPrecondition, "mpi: no dagrad::mpi::World in this process");
  return *g_world;
}

}  // namespace dagrad::mpi
