#include "models/activation.hpp"

#include <string>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {

Activation parse_activation(std::string_view s) {
  if (s == "relu") return Activation::relu;
  if (s == "elu") return Activation::elu;
  throw ConfigError("unknown activation '" + std::string(s) + "' (choices: relu, elu)");
}

const char* to_string(Activation a) { return a == Activation::relu ? "relu" : "elu"; }

void activation_forward(const Device& dev, Activation a, DenseView y) {
  if (a == Activation::relu) {
    kernels::relu_forward(dev, y, y);
  } else {
    kernels::elu_forward(dev, y, y);
  }
}

void activation_backward(const Device& dev, Activation a, ConstDenseView y, DenseView g) {
  if (a == Activation::relu) {
    kernels::relu_backward(dev, y, g, g);
  } else {
    kernels::elu_backward(dev, y, g, g);
  }
}

}  // namespace halognn
