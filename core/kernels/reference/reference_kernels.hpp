#pragma once
/// @file reference_kernels.hpp
/// The CPU (OpenMP + Eigen) implementations of every kernel in kernels.hpp, with the same
/// signatures minus the Device. kernels.cpp dispatches here when the device kind is cpu; tests of
/// the CUDA backend compare against these.
#include <cstdint>

#include "core/kernels/kernels.hpp"

namespace halognn::kernels::reference {

#define GNN_KERNEL(R, name, params, args) R name params;
#include "core/kernels/kernel_list.inc"
#undef GNN_KERNEL

}  // namespace halognn::kernels::reference
