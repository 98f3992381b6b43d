// Built only without the CUDA backend: the NCCL transport exists and says it is not compiled.
#include "comm/transport.hpp"
#include "core/error.hpp"

namespace halognn {

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm, DevicePtr) {
  throw NotCompiled("the NCCL transport");
}

}  // namespace halognn
