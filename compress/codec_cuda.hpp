#pragma once
/// @file codec_cuda.hpp
/// The GPU paths of the fp16/bf16 and b-bit codecs (internal; called by float16_codecs.cpp and
/// quant_codec.cpp when the device is a CUDA device). They write exactly the bytes the CPU codecs
/// write (docs/codecs.md): the float arithmetic is the shared code of quant_math.hpp and
/// float16.hpp, and the random draws are the same CounterRng words. All pointers are device
/// pointers; sizes were checked by the caller. Without the CUDA backend each throws NotCompiled.
#include <cstdint>
#include <span>

#include "compress/codec.hpp"
#include "compress/quant_math.hpp"

namespace halognn::codec_cuda {

/// Encodes a block with b-bit stochastic quantization. Returns false (bytes unspecified) when a
/// row is non-finite or its grid does not fit the metadata format; the caller then reproduces
/// the CPU codec's error message from a host copy.
bool quant_encode(int bits, quant::MetaFormat meta, ConstDenseView rows, const CodecContext& ctx,
                  std::span<std::byte> out);
void quant_decode(int bits, quant::MetaFormat meta, std::span<const std::byte> in, DenseView rows);

/// fp16 (bf16 == false) or bf16 encoding; returns false when a value is not finite.
bool half_encode(bool bf16, ConstDenseView rows, std::span<std::byte> out);
void half_decode(bool bf16, std::span<const std::byte> in, DenseView rows);

}  // namespace halognn::codec_cuda
