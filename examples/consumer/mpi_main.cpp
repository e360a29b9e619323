// The data-parallel part of the installed package (dagrad::mpi, built where Open MPI was found),
// used the way an embedding program does, under `mpirun -np N`: every process gives one shard,
// and each gets the shards' sum in process order, as the README's data-parallel section says.
// Exit status: 0 right results, 1 wrong ones or an error (one "error: ..." line).
#include <iostream>

#include <dagrad/backends/mpi/world.hpp>
#include <dagrad/dagrad.hpp>

int main(int argc, char** argv) {
  using namespace dagrad;
  return run_main([&] {
    const mpi::World world(&argc, &argv);
    Graph g;
    Output shard = ops::scalar(g, 1.0 + world.rank(), DType::Float64, "shard");
    Output sum = ops::collective_reduce_shards(g, {shard}, {.group_size = world.size()});
    const double got = Session(g).run({}, sum).data<double>()[0];
    const double want = world.size() * (world.size() + 1) / 2.0;  // 1 + 2 + ... + N
    if (world.rank() == 0)
      std::cout << (got == want ? "ok: " : "WRONG: ") << "the sum over " << world.size() << " processes\n";
    return got == want ? 0 : 1;
  });
}
