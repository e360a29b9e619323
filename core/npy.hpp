// .npy files: read and write tensors of every dtype (bfloat16 is written widened to float32).
#pragma once

#include <string>

#include "dagrad/core/tensor.hpp"

namespace dagrad {

// Reads a C-order or Fortran-order .npy file of little- or big-endian half, float32, float64,
// int32, int64 or bool. Throws InvalidArgument/NotFound naming the file on any problem.
Tensor read_npy(const std::string& path);
// Writes a host tensor as .npy version 1.0 (bfloat16 as float32, since .npy has no bfloat16).
void write_npy(const std::string& path, const Tensor& tensor);

// The same on in-memory bytes (used by the CLI tests and by readers of archives).
Tensor parse_npy(const std::string& bytes, const std::string& source);
std::string serialize_npy(const Tensor& tensor);

}  // namespace dagrad
