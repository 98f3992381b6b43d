#pragma once
/// @file activation.hpp
/// The nonlinearity between layers (the trainer applies it to every layer's output but the
/// last's): ReLU, or ELU as in Velickovic et al.'s GAT. Both are applied in place and
/// differentiated through their output, so the trainer keeps only the activated rows.
#include <string_view>

#include "core/buffer.hpp"
#include "core/device.hpp"

namespace halognn {

enum class Activation { relu, elu };

/// "relu" | "elu"; throws ConfigError listing the choices otherwise.
Activation parse_activation(std::string_view s);
const char* to_string(Activation a);

/// y = act(y), in place.
void activation_forward(const Device& dev, Activation a, DenseView y);
/// g = g * act'(x) in place, where y = act(x) is the forward's output.
void activation_backward(const Device& dev, Activation a, ConstDenseView y, DenseView g);

}  // namespace halognn
