#include "training/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>

#include "core/error.hpp"
#include "core/kernels/kernels.hpp"

namespace halognn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Divides each owned feature row by its sum (Kipf & Welling's preprocessing); zero rows stay.
void row_normalize(Matrix& features) {
  auto h = features.host();
  const std::int64_t rows = features.rows(), cols = features.cols();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < rows; ++i) {
    float* r = h.data() + i * cols;
    double s = 0;
    for (std::int64_t j = 0; j < cols; ++j) s += r[j];
    if (s == 0) continue;
    const float inv = static_cast<float>(1.0 / s);
    for (std::int64_t j = 0; j < cols; ++j) r[j] *= inv;
  }
}

/// The fraction of non-zero entries of a host matrix (0 for an empty one).
double nonzero_fraction(const Matrix& m) {
  const std::span<const float> h = m.host();
  std::int64_t nnz = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : nnz)
  for (std::size_t i = 0; i < h.size(); ++i) nnz += h[i] != 0.0f;
  return h.empty() ? 0.0 : static_cast<double>(nnz) / static_cast<double>(h.size());
}

}  // namespace

Trainer::Trainer(const TrainConfig& cfg, LocalPartition part, Transport& transport, DevicePtr dev)
    : cfg_(cfg), part_(std::move(part)), transport_(transport), dev_(std::move(dev)) {
  cfg_.validate();
  GNN_CHECK_CONFIG(part_.num_classes >= 1, "the partition has no classes");
  GNN_CHECK_CONFIG(part_.global_train > 0, "the partition has no training nodes");

  graph_ = LocalGraph::build(part_, dev_);
  plain_plan_ = std::make_shared<const HaloPlan>(HaloPlan::build(part_, dev_));
  if (cfg_.halo_rows == HaloRows::semantic) {
    GNN_CHECK_CONFIG(part_.has_groups, "--halo-rows semantic: the partition ", cfg_.partition_dir,
                     " has no semantic groups (re-run halognn-partition with --groups semantic)");
    const ModelKind kind = cfg_.model;
    const std::vector<std::int64_t>& degree = part_.global_degree;
    plan_ = std::make_shared<const HaloPlan>(HaloPlan::build_grouped(
        part_, [&](LocalId r) { return neighbour_scale(kind, degree[static_cast<std::size_t>(r)]); },
        dev_));
    // Layer 0's features cross once, exactly, as plain rows (unless --compress-layer0).
    if (!cfg_.compress_layer0)
      features_exchange_ = std::make_unique<HaloExchange>(plain_plan_, transport_, traffic_);
  } else {
    plan_ = plain_plan_;
  }
  exchange_ = std::make_unique<HaloExchange>(plan_, transport_, traffic_);
  codecs_ = parse_codec_plan(cfg_.codec, cfg_.codec_forward, cfg_.codec_backward, cfg_.layers);
  for (int l = 0; l < cfg_.layers; ++l) {
    exchange_->set_codec(l, Direction::forward, codecs_.forward[l]);
    exchange_->set_codec(l, Direction::backward, codecs_.backward[l]);
  }

  // Layer stack: hidden layers of width `hidden` (GAT: heads * hidden, concatenated), the last
  // layer maps to the classes (GAT: one head).
  std::int64_t in = part_.features.cols();
  for (int l = 0; l < cfg_.layers; ++l) {
    const bool last = l + 1 == cfg_.layers;
    LayerConfig lc;
    lc.kind = cfg_.model;
    lc.in_dim = in;
    lc.out_dim = last ? part_.num_classes : cfg_.hidden;
    lc.heads = (cfg_.model == ModelKind::gat && !last) ? cfg_.heads : 1;
    lc.concat_heads = !last;
    layers_.push_back(make_layer(lc, cfg_.seed, l));
    layers_.back()->prepare(graph_);
    in = layers_.back()->out_dim();
  }
  std::vector<Parameter*> params;
  for (auto& layer : layers_)
    for (Parameter* p : layer->parameters()) params.push_back(p);
  OptimizerConfig oc;
  oc.kind = cfg_.optimizer == OptimizerKind::adam ? OptimizerConfig::Kind::adam
                                                   : OptimizerConfig::Kind::sgd;
  oc.lr = cfg_.lr;
  oc.weight_decay = cfg_.weight_decay;
  oc.decay_biases = cfg_.decay_biases;
  oc.momentum = cfg_.momentum;
  optimizer_ = make_optimizer(oc, params, dev_);

  // Sparse layer-0 input (bag-of-words features): decided per rank from its owned rows (the
  // paths agree up to float summation order, so ranks need not agree); the CSR is built after the
  // feature exchange, and layer 0 then needs no dense dropout buffer.
  sparse_input_ = cfg_.sparse_features && nonzero_fraction(part_.features) < 0.1;

  // Buffers.
  const LocalId n_local = part_.num_local(), n_own = part_.num_owned;
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::int64_t w = layers_[l]->in_dim();
    x_.emplace_back(n_local, w, dev_);
    const bool dense_dropout = cfg_.dropout > 0 && !(l == 0 && sparse_input_);
    xd_.emplace_back(dense_dropout ? Matrix(n_local, w, dev_) : Matrix());
    // Layer 0's input gradient is never needed (features are constants).
    gx_.emplace_back(l == 0 ? Matrix() : Matrix(n_local, w, dev_));
  }
  {
    PolicyConfig pc;
    pc.mode = cfg_.exchange;
    pc.sync_every = cfg_.sync_every;
    pc.smoothing = cfg_.smoothing;
    pc.refresh.staleness_bound = cfg_.staleness_bound;
    pc.refresh.fraction = cfg_.refresh_fraction;
    pc.refresh.by = cfg_.refresh_by;
    pc.refresh.exact_backward = cfg_.refresh_exact_backward;
    pc.seed = cfg_.seed;
    std::vector<std::int64_t> widths;
    for (const auto& layer : layers_) widths.push_back(layer->in_dim());
    policy_ = make_exchange_policy(pc, *exchange_, n_own, part_.num_halo, widths, dev_);
  }
  logits_ = Matrix(n_own, layers_.back()->out_dim(), dev_);
  glogits_ = Matrix(n_own, layers_.back()->out_dim(), dev_);
  labels_ = Buffer<std::int32_t>::from_host(part_.labels, dev_);
  label_matrix_ = Buffer<std::uint8_t>::from_host(part_.label_matrix, dev_);
  train_mask_ = Buffer<std::uint8_t>::from_host(part_.train_mask, dev_);

  // Layer-0 input: owned features, then the halo features, exchanged once.
  if (cfg_.row_normalize_features) row_normalize(part_.features);
  {
    const Matrix f = part_.features.clone(dev_);
    kernels::copy(*dev_, f.view(), x_[0].view().rows_range(0, n_own));
  }
  part_.features = Matrix();  // the device copy in x_[0] is all we need from here on
  if (!cfg_.compress_layer0) exchange_->set_codec(0, Direction::forward, make_codec("fp32"));
}

void Trainer::exchange_features_once() {
  // Layer-0 halo rows are features: they never change, so they cross once, before epoch 0.
  // Kept out of the constructor so that a constructor error on one rank cannot leave the others
  // waiting in this exchange.
  if (features_exchanged_) return;
  const LocalId n_own = part_.num_owned, n_local = part_.num_local();
  DenseView x0 = x_[0].view();
  traffic_.reset();
  HaloExchange& ex = features_exchange_ ? *features_exchange_ : *exchange_;
  ex.start_forward(0, 0, cfg_.seed, x0.rows_range(0, n_own), x0.rows_range(n_own, n_local)).wait();
  feature_exchange_bytes_ = global_bytes(traffic_.total().total());
  features_exchanged_ = true;
  if (sparse_input_) {
    // All local rows, halo included; forward points layer 0 at these values or the dropped ones.
    x0_csr_ = kernels::dense_to_csr(dev_, x_[0].view());
    x0_dropped_ = Buffer<float>(static_cast<std::size_t>(x0_csr_.nnz()), dev_);
    x_[0] = Matrix();  // the CSR is all layer 0 reads from now on (1.2 GB saved on Physics)
  }
}

Trainer::~Trainer() = default;

void Trainer::forward(std::int64_t epoch, bool training) {
  const LocalId n_own = part_.num_owned;
  const bool drop = training && cfg_.dropout > 0;
  for (int l = 0; l < cfg_.layers; ++l) {
    // In sparse mode layer 0's dense input is gone; only its shape is passed.
    DenseView x = (l == 0 && sparse_input_)
                      ? DenseView{nullptr, part_.num_local(), layers_[0]->in_dim()}
                      : x_[l].view();
    if (l > 0) {
      if (training) policy_->forward(l, x);
      else policy_->forward_eval(l, epoch, x);
    }
    ConstDenseView in = x;
    if (l == 0 && sparse_input_) {
      // Layer 0 reads the CSR (x only gives the shape); dropout draws the dense path's mask on
      // the stored entries only.
      CsrView xs = x0_csr_.view();
      if (drop) {
        const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch), 0};
        kernels::dropout_csr(*dev_, key, graph_.global_ids.data(), cfg_.dropout, xs,
                             x0_dropped_.data());
        xs.val = x0_dropped_.data();
      }
      layers_[0]->set_sparse_input(xs);
    } else if (drop) {
      const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch),
                       static_cast<std::uint64_t>(l)};
      kernels::dropout_forward(*dev_, key, graph_.global_ids.data(), cfg_.dropout, x, xd_[l].view());
      in = xd_[l].view();
    }
    ForwardContext ctx{training, cfg_.seed, epoch, l};
    const bool last = l + 1 == cfg_.layers;
    DenseView y = last ? logits_.view() : x_[l + 1].view().rows_range(0, n_own);
    layers_[l]->forward(graph_, in, y, ctx);
    if (!last) kernels::relu_forward(*dev_, y, y);
    policy_->poll();
  }
}

double Trainer::loss_and_grad() {
  const float scale = 1.0f / static_cast<float>(part_.global_train);
  double local = 0;
  if (part_.multilabel) {
    local = kernels::sigmoid_bce(*dev_, logits_.view(), label_matrix_.data(), train_mask_.data(),
                                 scale, glogits_.view());
  } else {
    local = kernels::softmax_cross_entropy(*dev_, logits_.view(), labels_.data(),
                                           train_mask_.data(), scale, glogits_.view());
  }
  transport_.all_reduce_sum(&local, 1);
  return local / static_cast<double>(part_.global_train);
}

void Trainer::backward(std::int64_t epoch) {
  const LocalId n_own = part_.num_owned;
  const bool drop = cfg_.dropout > 0;
  for (int l = cfg_.layers - 1; l >= 0; --l) {
    const bool last = l + 1 == cfg_.layers;
    ConstDenseView gy = last ? ConstDenseView(glogits_.view())
                             : ConstDenseView(gx_[l + 1].view().rows_range(0, n_own));
    DenseView gx = gx_[l].view();
    // Layer 0's input gradient is not needed (features are constants): ask for none.
    layers_[l]->backward(graph_, gy, l == 0 ? DenseView{} : gx);
    if (l == 0) break;
    if (drop) {
      const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch),
                       static_cast<std::uint64_t>(l)};
      kernels::dropout_backward(*dev_, key, graph_.global_ids.data(), cfg_.dropout, gx, gx);
    }
    policy_->backward(l, gx);
    // Through the ReLU of layer l-1, whose output is the owned part of x_l.
    DenseView g_own = gx.rows_range(0, n_own);
    kernels::relu_backward(*dev_, x_[l].view().rows_range(0, n_own), g_own, g_own);
    policy_->poll();
  }
}

void Trainer::all_reduce_gradients() {
  const auto t0 = Clock::now();
  for (auto& layer : layers_)
    for (Parameter* p : layer->parameters()) {
      transport_.all_reduce_sum(*dev_, p->grad.data(), static_cast<std::size_t>(p->grad.size()));
      // A ring all-reduce moves about 2 (P-1)/P of the buffer per rank.
      const Rank np = transport_.size();
      if (np > 1)
        allreduce_bytes_ += static_cast<std::uint64_t>(2.0 * (np - 1) / np * p->grad.size() *
                                                       sizeof(float));
    }
  allreduce_s_ += seconds_since(t0);
}

std::array<std::int64_t, 9> Trainer::score_counts(bool eval_all) const {
  // Single-label: {correct, total} per split. Multi-label: {tp, fp, fn} per split (F1-micro).
  std::array<std::int64_t, 9> c{};
  const std::vector<float> logits = logits_.to_host();
  const std::int64_t classes = logits_.cols();
  const std::vector<std::uint8_t>* masks[3] = {&part_.train_mask, &part_.val_mask, &part_.test_mask};
  for (int s = 0; s < (eval_all ? 3 : 1); ++s) {
    const auto& mask = *masks[s];
    for (LocalId i = 0; i < part_.num_owned; ++i) {
      if (!mask[i]) continue;
      const float* row = logits.data() + static_cast<std::int64_t>(i) * classes;
      if (part_.multilabel) {
        for (std::int64_t j = 0; j < classes; ++j) {
          const bool pred = row[j] > 0, truth = part_.label_matrix[i * classes + j] != 0;
          c[3 * s] += pred && truth;
          c[3 * s + 1] += pred && !truth;
          c[3 * s + 2] += !pred && truth;
        }
      } else {
        if (part_.labels[i] < 0) continue;
        const std::int64_t arg = std::max_element(row, row + classes) - row;
        c[3 * s] += arg == part_.labels[i];
        c[3 * s + 1] += 1;
      }
    }
  }
  return c;
}

SplitScores Trainer::scores_from_counts(const std::array<std::int64_t, 9>& c, bool multilabel) {
  auto score = [&](int s) {
    if (multilabel) {
      const double tp = c[3 * s], fp = c[3 * s + 1], fn = c[3 * s + 2];
      return tp == 0 ? 0.0 : 2 * tp / (2 * tp + fp + fn);
    }
    return c[3 * s + 1] == 0 ? 0.0 : static_cast<double>(c[3 * s]) / c[3 * s + 1];
  };
  return {score(0), score(1), score(2)};
}

std::uint64_t Trainer::global_bytes(std::uint64_t local) const {
  std::int64_t v = static_cast<std::int64_t>(local);
  transport_.all_reduce_sum(&v, 1);
  return static_cast<std::uint64_t>(v);
}

std::pair<std::int64_t, std::int64_t> Trainer::rows_per_exchange() {
  ensure_link_rows();
  const auto k = static_cast<std::size_t>(transport_.size());
  std::int64_t plain = 0, sent = 0;
  for (std::size_t i = 0; i < k * k; ++i) {
    plain += link_rows_[i];
    sent += link_rows_[k * k + i];
  }
  return {plain, sent};
}

void Trainer::ensure_link_rows() {
  const auto k = static_cast<std::size_t>(transport_.size());
  const auto me = static_cast<std::size_t>(transport_.rank());
  if (link_rows_.empty()) {
    link_rows_.assign(2 * k * k, 0);
    const SlotMap& plain = plain_plan_->send();
    const SlotMap& sent = plan_->send();
    for (std::size_t i = 0; i < plain.num_peers(); ++i)
      link_rows_[me * k + static_cast<std::size_t>(plain.peers()[i])] = plain.count(i);
    for (std::size_t i = 0; i < sent.num_peers(); ++i)
      link_rows_[k * k + me * k + static_cast<std::size_t>(sent.peers()[i])] = sent.count(i);
    transport_.all_reduce_sum(link_rows_.data(), link_rows_.size());
  }
}

Json Trainer::link_metrics() {
  ensure_link_rows();
  const auto k = static_cast<std::size_t>(transport_.size());
  const auto me = static_cast<std::size_t>(transport_.rank());
  const auto layers = static_cast<std::size_t>(cfg_.layers);
  std::vector<std::int64_t> bytes(k * k * layers * 2, 0);
  for (std::size_t q = 0; q < k; ++q)
    for (std::size_t l = 0; l < layers; ++l)
      for (std::size_t d = 0; d < 2; ++d)
        bytes[((me * k + q) * layers + l) * 2 + d] = static_cast<std::int64_t>(
            traffic_.bytes_to(static_cast<Rank>(q), static_cast<int>(l), static_cast<Direction>(d)));
  transport_.all_reduce_sum(bytes.data(), bytes.size());
  Json links = Json::array();
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t q = 0; q < k; ++q) {
      if (link_rows_[p * k + q] == 0) continue;
      Json fwd = Json::array(), bwd = Json::array();
      for (std::size_t l = 0; l < layers; ++l) {
        fwd.push_back(bytes[((p * k + q) * layers + l) * 2]);
        // The backward messages of link p -> q travel q -> p.
        bwd.push_back(bytes[((q * k + p) * layers + l) * 2 + 1]);
      }
      links.push_back({{"from", p}, {"to", q}, {"rows_plain", link_rows_[p * k + q]},
                       {"rows", link_rows_[k * k + p * k + q]}, {"fwd_bytes", std::move(fwd)},
                       {"bwd_bytes", std::move(bwd)}});
    }
  return links;
}

SplitScores Trainer::evaluate(std::int64_t epoch) {
  exchange_features_once();
  forward(epoch, /*training=*/false);
  auto c = score_counts(true);
  transport_.all_reduce_sum(c.data(), c.size());
  return scores_from_counts(c, part_.multilabel);
}

EpochMetrics Trainer::run_epoch(std::int64_t epoch, bool evaluate_now) {
  EpochMetrics m;
  m.epoch = epoch;
  exchange_->reset_timers();
  allreduce_s_ = 0;
  allreduce_bytes_ = 0;
  traffic_.reset();

  exchange_features_once();
  traffic_.reset();
  policy_->begin_epoch(epoch);
  const auto t0 = Clock::now();
  forward(epoch, true);
  optimizer_->zero_grad();
  m.loss = loss_and_grad();
  backward(epoch);
  all_reduce_gradients();
  optimizer_->step();
  dev_->synchronize();
  const double step_s = seconds_since(t0);

  {
    auto c = score_counts(false);
    transport_.all_reduce_sum(c.data(), c.size());
    m.train_score = scores_from_counts(c, part_.multilabel).train;
  }
  const double comm_s = exchange_->wait_seconds() + allreduce_s_;
  const double codec_s = exchange_->codec_seconds();
  const std::uint64_t train_bytes = traffic_.total().total() + allreduce_bytes_;
  // Per layer and direction, summed over ranks (collective).
  m.traffic = traffic_.sum_over_ranks(transport_).to_json();
  m.links = link_metrics();

  // Evaluation traffic is real traffic, but it is not part of the training step: count it apart.
  if (evaluate_now) {
    traffic_.reset();
    m.eval = evaluate(epoch);
    m.eval_bytes_sent = global_bytes(traffic_.total().total());
  }

  double t[4] = {step_s, step_s - comm_s - codec_s, comm_s, codec_s};
  double tmax[1] = {step_s};
  transport_.all_reduce_max(tmax, 1);
  transport_.all_reduce_sum(t, 4);
  const double np = transport_.size();
  m.epoch_s = tmax[0];
  m.compute_s = t[1] / np;
  m.comm_s = t[2] / np;
  m.codec_s = t[3] / np;
  m.bytes_sent = global_bytes(train_bytes);
  m.synchronous = policy_->synchronous_epoch();
  const HaloAges ages = policy_->ages().sum_over_ranks(transport_);
  m.max_staleness = ages.max_age();
  m.halo_age = ages.to_json();
  m.policy = policy_->summarize(transport_);
  return m;
}

FinalMetrics Trainer::run(const std::function<void(const EpochMetrics&)>& on_epoch) {
  FinalMetrics f;
  const auto t0 = Clock::now();
  exchange_features_once();
  f.feature_exchange_bytes = feature_exchange_bytes_;
  f.feature_exchange_codec = (features_exchange_ ? *features_exchange_ : *exchange_)
                                 .codec(0, Direction::forward)
                                 .name();
  f.total_bytes_sent = feature_exchange_bytes_;
  for (int e = 0; e < cfg_.epochs; ++e) {
    const bool eval_now = (e + 1) % cfg_.eval_every == 0 || e + 1 == cfg_.epochs;
    EpochMetrics m = run_epoch(e, eval_now);
    f.total_bytes_sent += m.bytes_sent + m.eval_bytes_sent;
    if (m.eval && (f.best_epoch < 0 || m.eval->val > f.best_val)) {
      f.best_epoch = e;
      f.best_val = m.eval->val;
      f.test_at_best_val = m.eval->test;
    }
    if (on_epoch) on_epoch(m);
    if (!std::isfinite(m.loss)) {
      char lr[32];
      std::snprintf(lr, sizeof lr, "%g", static_cast<double>(cfg_.lr));
      throw TrainingDiverged(e, m.loss,
                             "training diverged: the loss of epoch " + std::to_string(e) + " is " +
                                 (std::isnan(m.loss) ? "nan" : "infinite") +
                                 " (try a smaller --lr than " + lr + ")");
    }
  }
  policy_->finish();
  f.total_s = seconds_since(t0);
  double t = f.total_s;
  transport_.all_reduce_max(&t, 1);
  f.total_s = t;
  return f;
}

}  // namespace halognn
