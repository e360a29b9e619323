// Job: dagrad::mpi::World where train_cnn is built with MPI; one process otherwise.
#include "job.hpp"

#include <dagrad/core/error.hpp>

#ifdef DAGRAD_TRAIN_CNN_MPI
#include <dagrad/backends/mpi/world.hpp>
#endif

namespace train_cnn {

#ifdef DAGRAD_TRAIN_CNN_MPI

struct Job::Mpi {
  Mpi(int* argc, char*** argv) : world(argc, argv) {}
  dagrad::mpi::World world;
};

bool built_with_mpi() { return true; }

Job::Job(int* argc, char*** argv) : mpi_(std::make_unique<Mpi>(argc, argv)) {}

int Job::rank() const { return mpi_ ? mpi_->world.rank() : 0; }
int Job::size() const { return mpi_ ? mpi_->world.size() : 1; }

std::vector<double> Job::all_gather(const std::vector<double>& values) const {
  return mpi_ ? mpi_->world.all_gather(values) : values;
}

std::string Job::broadcast(const std::string& bytes) const { return mpi_ ? mpi_->world.broadcast(bytes) : bytes; }

void Job::broadcast_variables(dagrad::Session& session, const dagrad::layers::VariableSet& vars) const {
  if (mpi_) mpi_->world.broadcast_variables(session, vars);
}

#else  // no MPI: always this process alone

struct Job::Mpi {};

bool built_with_mpi() { return false; }

Job::Job(int*, char***) {
  dagrad::fail(dagrad::Code::FailedPrecondition, "--data-parallel: this train_cnn was built without MPI");
}

int Job::rank() const { return 0; }
int Job::size() const { return 1; }
std::vector<double> Job::all_gather(const std::vector<double>& values) const { return values; }
std::string Job::broadcast(const std::string& bytes) const { return bytes; }
void Job::broadcast_variables(dagrad::Session&, const dagrad::layers::VariableSet&) const {}

#endif

Job::Job() = default;
Job::~Job() = default;

}  // namespace train_cnn
