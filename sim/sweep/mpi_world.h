#pragma once
// The MPI side of `kvsim sweep` (the only file that includes mpi.h, and only in a build configured
// with MPI: KVSIM_HAVE_MPI). Ranks never exchange results: each runs its round-robin share of the
// points and writes their files; the ranks then gather small status counts to rank 0, which merges.
#include <array>
#include <memory>
#include <vector>

namespace kvsim {

// True when this process was started by mpirun / mpiexec (Open MPI, PMIx or MPICH environment).
bool launched_by_mpirun();
// True when this build has MPI support.
bool built_with_mpi();

class MpiWorld {
 public:
  // Initialises MPI (funneled: only the calling thread talks MPI). Throws InputError in a build
  // without MPI.
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  void barrier();
  // Ends every rank with `code` (a rank that fails outside a point would leave the others waiting).
  [[noreturn]] void abort(int code);
  // Gathers every rank's counts to rank 0 (rank order); other ranks get an empty vector.
  std::vector<std::array<int, 4>> gather(const std::array<int, 4>& counts);

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kvsim
