#include "sim/sweep/mpi_world.h"

#include <cstdlib>

#include "sim/core/errors.h"

#ifdef KVSIM_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace kvsim {

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef KVSIM_HAVE_MPI

bool built_with_mpi() { return true; }

MpiWorld::MpiWorld() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

void MpiWorld::barrier() { MPI_Barrier(MPI_COMM_WORLD); }

void MpiWorld::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

std::vector<std::array<int, 4>> MpiWorld::gather(const std::array<int, 4>& counts) {
  std::vector<std::array<int, 4>> all(rank_ == 0 ? size_ : 0);
  MPI_Gather(counts.data(), 4, MPI_INT, rank_ == 0 ? all.data()->data() : nullptr, 4, MPI_INT, 0, MPI_COMM_WORLD);
  return all;
}

#else

bool built_with_mpi() { return false; }

MpiWorld::MpiWorld() {
  throw InputError(
      "sweep: started by mpirun, but this kvsim was built without MPI (install libopenmpi-dev and reconfigure, or "
      "use --shard i/n)");
}
MpiWorld::~MpiWorld() = default;
void MpiWorld::barrier() {}
void MpiWorld::abort(int code) { std::exit(code); }
std::vector<std::array<int, 4>> MpiWorld::gather(const std::array<int, 4>& counts) { return {counts}; }

#endif

}  // namespace kvsim
