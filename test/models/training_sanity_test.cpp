// End-to-end, single process: a 2-layer GCN trained with Adam on a planted-partition graph (the
// layers, ReLU, loss, backward and optimiser together) learns the planted classes.
#include <gtest/gtest.h>

#include <vector>

#include "core/kernels/kernels.hpp"
#include "models/layer.hpp"
#include "models/local_graph.hpp"
#include "models/loss.hpp"
#include "models/optimizer.hpp"
#include "test/models/model_test_util.hpp"

namespace halognn {
namespace {

TEST(Training, TwoLayerGcnWithAdamFitsAPlantedPartitionGraph) {
  const GlobalId n = 300;
  const int classes = 3, features = 8;
  // Planted partition: class = v % 3; edge probability 0.06 inside a class, 0.004 across.
  test::SmallGraph graph;
  graph.adj.resize(n);
  const CounterRng rng(RngKey{1, RngPurpose::test, 5, 5});
  for (GlobalId u = 0; u < n; ++u) {
    for (GlobalId v = u + 1; v < n; ++v) {
      const double p = u % classes == v % classes ? 0.06 : 0.004;
      if (rng.uniform_double(static_cast<std::uint64_t>(u * n + v), 0) < p) {
        graph.adj[u].push_back(v);
        graph.adj[v].push_back(u);
      }
    }
  }
  const LocalPartition part = test::whole_graph(graph);
  const LocalGraph g = LocalGraph::build(part, cpu_device());
  // Features: a weak class signal (0.5 on the class's coordinate) under uniform noise in [-1, 1),
  // so a feature-only classifier is mediocre and neighbourhood averaging is what makes it easy.
  Matrix x(n, features);
  std::vector<std::int32_t> labels(n);
  std::vector<std::uint8_t> train(n), test(n);
  for (GlobalId v = 0; v < n; ++v) {
    labels[v] = static_cast<std::int32_t>(v % classes);
    for (int j = 0; j < features; ++j) {
      x(v, j) = 2.0f * rng.uniform(static_cast<std::uint64_t>(v), 1 + j) - 1.0f +
                (j == labels[v] ? 0.5f : 0.0f);
    }
    train[v] = v % 2 == 0;
    test[v] = v % 2 == 1;
  }

  std::vector<std::unique_ptr<Layer>> layers;
  LayerConfig c;
  c.in_dim = features;
  c.out_dim = 16;
  layers.push_back(make_layer(c, 7, 0));
  c.in_dim = 16;
  c.out_dim = classes;
  layers.push_back(make_layer(c, 7, 1));
  std::vector<Parameter*> params;
  for (auto& l : layers) {
    l->prepare(g);
    for (Parameter* p : l->parameters()) params.push_back(p);
  }
  OptimizerConfig oc;
  oc.lr = 0.01f;
  oc.weight_decay = 5e-4f;
  auto opt = make_optimizer(oc, params, cpu_device());

  const Device& dev = *cpu_device();
  const LossTargets targets{false, labels.data(), nullptr};
  Matrix h(n, 16), logits(n, classes), glogits(n, classes), gh(n, 16);
  const float scale = 1.0f / 150.0f;
  double first_loss = 0, loss = 0;
  for (int epoch = 0; epoch < 100; ++epoch) {
    layers[0]->forward(g, x.view(), h.view(), {true, 7, epoch, 0});
    kernels::relu_forward(dev, h.view(), h.view());
    layers[1]->forward(g, h.view(), logits.view(), {true, 7, epoch, 1});
    opt->zero_grad();
    loss = loss_and_grad(dev, targets, logits.view(), train.data(), scale, glogits.view()) / 150.0;
    if (epoch == 0) first_loss = loss;
    layers[1]->backward(g, glogits.view(), gh.view());
    kernels::relu_backward(dev, h.view(), gh.view(), gh.view());
    layers[0]->backward(g, gh.view(), DenseView{});
    opt->step();
  }
  const double train_acc = count_scores(dev, targets, logits.view(), train.data()).accuracy();
  const double test_acc = count_scores(dev, targets, logits.view(), test.data()).accuracy();
  EXPECT_LT(loss, 0.5 * first_loss);
  EXPECT_GT(train_acc, 0.9);
  EXPECT_GT(test_acc, 0.85);
}

}  // namespace
}  // namespace halognn
