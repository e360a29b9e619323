// The processes of one train_cnn run: this process alone, or, with --data-parallel, an MPI job
// (dagrad::mpi::World) in which every process trains its micro-shards of each global batch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <dagrad/core/session.hpp>
#include <dagrad/ops/layers.hpp>

namespace train_cnn {

// Whether this train_cnn was built with MPI (DAGRAD_TRAIN_CNN_MPI), i.e. can train data-parallel.
bool built_with_mpi();

class Job {
 public:
  Job();  // this process alone, without MPI
  // Starts MPI for a data-parallel run (a job of one without mpirun). FailedPrecondition in a
  // build without MPI. While an exception unwinds, the destructor leaves MPI without finalising
  // it, so mpirun ends the other processes (see dagrad::mpi::World).
  Job(int* argc, char*** argv);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  bool data_parallel() const { return mpi_ != nullptr; }
  int rank() const;
  int size() const;
  // The process that reports: prints, writes files and checkpoints.
  bool reports() const { return rank() == 0; }

  // Every process's `values` concatenated in rank order (each process gives as many).
  std::vector<double> all_gather(const std::vector<double>& values) const;
  // Process 0's `bytes` on every process.
  std::string broadcast(const std::string& bytes) const;
  // Every variable of `vars` set to process 0's value.
  void broadcast_variables(dagrad::Session& session, const dagrad::layers::VariableSet& vars) const;

 private:
  struct Mpi;  // the dagrad::mpi::World, in builds with MPI
  std::unique_ptr<Mpi> mpi_;
};

}  // namespace train_cnn
