// The MPI communicator behind dagrad::mpi::World, and the check that turns a failed MPI call's
// code into a dagrad::Error (backend-internal: not installed).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>

#include "dagrad/core/dtype.hpp"

namespace dagrad::mpi {

// World's duplicate of MPI_COMM_WORLD (MPI_ERRORS_RETURN); MPI_COMM_NULL before World exists.
MPI_Comm communicator();

// Internal error "CALL failed on rank R of N: <MPI's message>" unless rc is MPI_SUCCESS.
void check(int rc, std::string_view call);

// The count of one MPI call (elements or bytes), which takes an int: OutOfRange naming `what` above INT_MAX.
int mpi_count(std::int64_t count, std::string_view what);

// The MPI datatype of a dagrad dtype (the floating and integer types); Unimplemented otherwise.
MPI_Datatype mpi_type(DType dtype);

// Registers the kernels of the "mpi" backend (World's constructor does, once).
void register_kernels();

}  // namespace dagrad::mpi
