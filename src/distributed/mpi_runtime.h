// Open MPI's process-wide state as wick uses it (only with WICK_HAVE_MPI): MPI is initialized
// once, by the first group or bootstrap that needs it, and finalized at process exit unless a
// group's worker is still stuck in a collective.
#pragma once

#ifdef WICK_HAVE_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // MPI's C API only
#endif
#include <mutex>
#include <string>

#include <mpi.h>

namespace wick::distributed::detail {

// Initializes MPI (MPI_THREAD_MULTIPLE when offered) unless someone already did.
void mpi_ensure_initialized(const char* op);
// Serializes MPI calls when MPI was initialized without MPI_THREAD_MULTIPLE; else holds nothing.
std::unique_lock<std::mutex> mpi_lock();
// Raises DistributedError "[op] <MPI's message> (context)" when rc is not MPI_SUCCESS.
void mpi_check(int rc, const char* op, const std::string& context);

}  // namespace wick::distributed::detail
#endif
