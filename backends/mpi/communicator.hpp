// The MPI communicator behind dagrad::mpi::World, and the check that turns a failed MPI call's
// code into a dagrad::Error (backend-internal: not installed).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dagrad/core/dtype.hpp"

namespace dagrad::mpi {

// A duplicate of World's communicator (MPI_COMM_WORLD's, with MPI_ERRORS_RETURN) of its own for
// `key` (a collective node's name), made on its first use and kept: exchanges in flight at once
// each run their MPI calls in one order on every process, but which of two exchanges posts its
// next call first depends on when each completes, and MPI matches collectives on one
// communicator by their order. Every process must ask for a new key at the same point of its run
// (the duplication is itself a collective).
MPI_Comm communicator_for(const std::string& key);

// Internal error "CALL failed on rank R of N: <MPI's message>" unless rc is MPI_SUCCESS.
void check(int rc, std::string_view call);

// Completes a nonblocking call (`request` from MPI_I...; `call` names it in errors). Every
// exchange goes through here rather than through MPI's blocking calls, for two reasons: past
// the World's timeout it fails instead of waiting forever on a process that is stuck (a process
// that dies makes mpirun end the job; one that hangs would not), and between polls it yields
// the core, so that processes oversubscribing the cores do not starve the one they wait for.
// After a timeout the World is broken: MPI may still write into the call's buffers, so callers
// keep those alive (see abandon), and every later call fails at once.
void wait_for(MPI_Request& request, std::string_view call);

// FailedPrecondition when a collective has timed out in this process: its job cannot go on.
void require_unbroken(std::string_view call);

// Keeps `buffer` alive for the rest of the process: a timed-out call's buffers, which MPI may
// still write.
void abandon(std::vector<std::byte> buffer);

// The count of one MPI call (elements or bytes), which takes an int: OutOfRange naming `what` above INT_MAX.
int mpi_count(std::int64_t count, std::string_view what);

// The MPI datatype of a dagrad dtype (the floating and integer types); Unimplemented otherwise.
MPI_Datatype mpi_type(DType dtype);

// Registers the kernels of the "mpi" backend (World's constructor does, once).
void register_kernels();

}  // namespace dagrad::mpi
