// The float32 FMA peak of one core, measured now: on shared virtual machines the host (and so
// the peak) changes from run to run, so a kernel's fraction of peak must use this run's figure.
#pragma once

namespace dagrad_bench {

// GFLOP/s of independent vector FMAs on one core (AVX-512 where the CPU has it, else AVX2+FMA;
// 0 where it has neither), over about `seconds` of runs, the best of a few.
double measured_fma_peak_gflops(double seconds = 0.3);

}  // namespace dagrad_bench
