// World: MPI's initialisation and finalisation, the communicator, errors as dagrad::Errors, and
// the helpers data-parallel training needs outside the graph (broadcast of the variables).
#include "dagrad/backends/mpi/world.hpp"

#include <climits>
#include <exception>

#include "dagrad/backends/mpi/communicator.hpp"
#include "dagrad/core/checked.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad::mpi {
namespace {

const World* g_world = nullptr;
MPI_Comm g_comm = MPI_COMM_NULL;

}  // namespace

MPI_Comm communicator() { return g_comm; }

void check(int rc, std::string_view call) {
  if (rc == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, message, &length) != MPI_SUCCESS) length = 0;
  int rank = -1, size = 0;
  if (g_comm != MPI_COMM_NULL) {
    MPI_Comm_rank(g_comm, &rank);
    MPI_Comm_size(g_comm, &size);
  }
  fail(Code::Internal, call, " failed on rank ", rank, " of ", size, ": ", std::string_view(message, length));
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
  if (std::uncaught_exceptions() > 0 && size_ > 1) return;  // see the class comment
  MPI_Comm_free(&g_comm);
  g_comm = MPI_COMM_NULL;
  MPI_Finalize();
}

void World::broadcast_variables(Session& session, const layers::VariableSet& vars) const {
  VariableStore& store = session.variables();
  for (const Output& var : vars.all()) {
    const std::string& name = var.op().name;
    Tensor value = store.get(name).clone();  // FailedPrecondition when the initializer has not run
    const int bytes = mpi_count(static_cast<std::int64_t>(value.nbytes()), name);  // any dtype, as bytes
    check(MPI_Bcast(value.raw_data(), bytes, MPI_BYTE, 0, g_comm), "MPI_Bcast of " + name);
    store.set(name, std::move(value));
  }
}

std::vector<std::uint64_t> World::all_gather(std::uint64_t value) const {
  std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T, g_comm), "MPI_Allgather");
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
  const int count = mpi_count(static_cast<std::int64_t>(values.size()), "mpi::World::all_gather");
  std::vector<double> all(
      static_cast<std::size_t>(checked_mul(count, static_cast<std::int64_t>(counts.size()), "mpi::World::all_gather")));
  check(MPI_Allgather(values.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, g_comm), "MPI_Allgather");
  return all;
}

std::string World::broadcast(const std::string& bytes) const {
  std::uint64_t size = bytes.size();
  check(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, g_comm), "MPI_Bcast");
  const int count = mpi_count(static_cast<std::int64_t>(size), "mpi::World::broadcast");
  std::string out = rank_ == 0 ? bytes : std::string(static_cast<std::size_t>(count), '\0');
  check(MPI_Bcast(out.data(), count, MPI_BYTE, 0, g_comm), "MPI_Bcast");
  return out;
}

void World::barrier() const { check(MPI_Barrier(g_comm), "MPI_Barrier"); }

const World& world() {
  if (g_world == nullptr) fail(Code::FailedPrecondition, "mpi: no dagrad::mpi::World in this process");
  return *g_world;
}

}  // namespace dagrad::mpi
