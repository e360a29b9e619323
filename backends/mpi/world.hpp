// dagrad::mpi::World: this process's place in an MPI job, for data-parallel training across
// processes and machines (Open MPI under `mpirun`). Built with DAGRAD_MPI; link dagrad::mpi.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagrad/core/session.hpp"
#include "dagrad/ops/layers.hpp"

namespace dagrad::mpi {

// One per process, for its whole MPI life. Creating it initialises MPI, takes a private
// duplicate of MPI_COMM_WORLD whose errors come back as codes (MPI_ERRORS_RETURN: every failed
// call is a dagrad::Error naming the call and the rank) and registers the "mpi" kernels of
// CollectiveReduceShards. Destroying it finalises MPI, except while an exception unwinds in a
// job of several processes: then the process ends without MPI_Finalize (which would wait for the
// other processes), and mpirun, seeing a process leave the job that way, ends every other one.
class World {
 public:
  World(int* argc, char*** argv);  // FailedPrecondition when a World exists or MPI was initialised
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // How long one exchange (a collective's, a broadcast's) waits for the other processes before
  // it fails with an error naming the call: a process that is stuck would otherwise hang the
  // whole job. DAGRAD_MPI_TIMEOUT (seconds) when set, else 300. A timed-out exchange leaves MPI
  // unusable: every later exchange of the process fails, and the process should end (with an
  // exception unwinding, ~World skips MPI_Finalize and mpirun ends the job).
  double timeout_seconds() const;
  void set_timeout_seconds(double seconds);  // InvalidArgument unless positive and finite

  // Sets every variable of `vars` in `session` to process 0's value (after its initializer ran).
  void broadcast_variables(Session& session, const layers::VariableSet& vars) const;
  // `value` from every process, in rank order.
  std::vector<std::uint64_t> all_gather(std::uint64_t value) const;
  // Every process's `values`, concatenated in rank order. Each process gives as many values as
  // process 0; InvalidArgument naming the counts otherwise (on every process).
  std::vector<double> all_gather(const std::vector<double>& values) const;
  // Process 0's `bytes`, on every process (each process's own `bytes` is ignored but by 0).
  std::string broadcast(const std::string& bytes) const;
  void barrier() const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

// The process's World; FailedPrecondition when there is none.
const World& world();

}  // namespace dagrad::mpi
