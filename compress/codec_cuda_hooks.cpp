// Built only without the CUDA backend: the GPU codec paths exist and say they are not compiled.
#include "compress/codec_cuda.hpp"
#include "core/error.hpp"

namespace halognn::codec_cuda {

bool quant_encode(int, quant::MetaFormat, ConstDenseView, const CodecContext&, std::span<std::byte>) {
  throw NotCompiled("the GPU quantization codec");
}
void quant_decode(int, quant::MetaFormat, std::span<const std::byte>, DenseView) {
  throw NotCompiled("the GPU quantization codec");
}
bool half_encode(bool, ConstDenseView, std::span<std::byte>) {
  throw NotCompiled("the GPU fp16/bf16 codec");
}
void half_decode(bool, std::span<const std::byte>, DenseView) {
  throw NotCompiled("the GPU fp16/bf16 codec");
}

}  // namespace halognn::codec_cuda
