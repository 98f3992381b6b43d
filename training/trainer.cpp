#include "training/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/kernels/kernels.hpp"
#include "training/lr_schedule.hpp"
#include "training/model_selection.hpp"
#include "training/roc_auc.hpp"

namespace halognn {
namespace {

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
    : cfg_(cfg), part_(std::move(part)), transport_(transport), dev_(std::move(dev)),
      selection_(cfg.select_by, cfg.patience), schedule_(cfg) {
  cfg_.validate();
  GNN_CHECK_CONFIG(part_.num_classes >= 1, "the partition has no classes");
  GNN_CHECK_CONFIG(part_.global_train > 0, "the partition has no training nodes");
  activation_ = cfg_.resolved_activation();
  // Residual blocks draw their own dropout and activate inside; the trainer adds neither.
  input_dropout_ = cfg_.architecture == Architecture::residual ? 0.0f : cfg_.dropout;
  metric_ = cfg_.metric;
  if (metric_ == MetricKind::automatic)
    metric_ = part_.multilabel ? MetricKind::f1_micro : MetricKind::accuracy;
  GNN_CHECK_CONFIG(metric_ != MetricKind::f1_micro || part_.multilabel,
                   "--metric f1-micro needs multi-label data (use accuracy)");
  GNN_CHECK_CONFIG(metric_ != MetricKind::accuracy || !part_.multilabel,
                   "--metric accuracy needs single-label data (use f1-micro)");
  GNN_CHECK_CONFIG(metric_ != MetricKind::roc_auc || (!part_.multilabel && part_.num_classes == 2),
                   "--metric roc-auc needs a binary single-label task (this one has ",
                   part_.num_classes, part_.multilabel ? " labels" : " classes", ")");

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
  // Layer 0's features cross exactly unless --compress-layer0 names a codec for them.
  if (!cfg_.compress_layer0) exchange_->set_codec(0, Direction::forward, make_codec("fp32"));

  // Layer stack: hidden layers of width `hidden` (GAT: heads * hidden, concatenated), the last
  // layer maps to the classes (GAT: output_heads heads, averaged; GIN: through an MLP of width
  // `hidden`).
  std::int64_t in = part_.num_features();
  for (int l = 0; l < cfg_.layers; ++l) {
    const bool last = l + 1 == cfg_.layers;
    LayerConfig lc;
    lc.kind = cfg_.model;
    lc.in_dim = in;
    lc.out_dim = last ? part_.num_classes : cfg_.hidden;
    if (cfg_.model == ModelKind::gat) lc.heads = last ? cfg_.output_heads : cfg_.heads;
    lc.concat_heads = !last;
    lc.attention_dropout = cfg_.attention_dropout;
    lc.value_dropout = cfg_.value_dropout;
    lc.mlp_hidden = cfg_.hidden;
    lc.eps = cfg_.gin_eps;
    lc.train_eps = cfg_.train_eps;
    lc.bias = cfg_.bias;
    if (cfg_.architecture == Architecture::residual) {
      // Residual blocks of width `hidden`; the first takes the features, the last ends in the
      // output head (models/residual_block.cpp).
      lc.residual = true;
      lc.heads = cfg_.heads;  // GAT blocks: every block's attention, the head is linear
      lc.hidden = cfg_.hidden;
      lc.input_linear = l == 0;
      lc.output_head = last;
      lc.dropout = cfg_.dropout;
    }
    layers_.push_back(make_layer(lc, cfg_.seed, l));
    layers_.back()->prepare(graph_);
    in = layers_.back()->out_dim();
  }
  // Every layer has its operator: the adjacency they were built from, on the device and in the
  // partition, is not read again.
  graph_.adj = CsrMatrix();
  std::vector<std::int32_t>().swap(part_.row_ptr);
  std::vector<LocalId>().swap(part_.col);
  const std::vector<Parameter*> params = parameters();
  OptimizerConfig oc;
  oc.kind = cfg_.optimizer == OptimizerKind::adam ? OptimizerConfig::Kind::adam
                                                   : OptimizerConfig::Kind::sgd;
  oc.lr = cfg_.lr;
  oc.weight_decay = cfg_.weight_decay;
  oc.decay_biases = cfg_.decay_biases;
  oc.momentum = cfg_.momentum;
  optimizer_ = make_optimizer(oc, params, dev_);
  if (cfg_.decay_first_layer_only)
    for (std::size_t l = 1; l < layers_.size(); ++l)
      for (const Parameter* p : layers_[l]->parameters()) optimizer_->set_weight_decay(p, 0.0f);

  // Sparse layer-0 input (bag-of-words features): decided per rank from its owned rows (the
  // paths agree up to float summation order, so ranks need not agree); the CSR is built after the
  // feature exchange, and layer 0 then needs no dense dropout buffer.
  // Sparsified features (a partition written with --sparsify-features) are read by layer 0 as
  // they are stored, positions and codebook: no rank ever holds them dense.
  compact_input_ = part_.sparsified();
  GNN_CHECK_CONFIG(!compact_input_ || !cfg_.compress_layer0,
                   "--compress-layer0: the partition ", cfg_.partition_dir,
                   " holds sparsified features, whose positions cross once as they are (no codec)");
  sparse_input_ = !compact_input_ && cfg_.sparse_features && nonzero_fraction(part_.features) < 0.1;
  const bool csr_direct = sparse_input_ && feature_rows_exchange();

  // Buffers. The halo rows of layer inputs and input gradients that layers can share are held
  // once (training/halo_sharing.hpp): those matrices hold their owned rows only.
  const LocalId n_local = part_.num_local(), n_own = part_.num_owned;
  {
    std::vector<HaloUse> uses;
    for (int l = 0; l < cfg_.layers; ++l) {
      const Layer& layer = *layers_[static_cast<std::size_t>(l)];
      const bool copy = input_dropout_ > 0 && !dropout_in_place();  // the layer reads xd_[l]
      uses.push_back({layer.in_dim(), layer.splits(), layer.keeps_input_halo() && !copy});
    }
    halo_sharing_ = plan_halo_sharing(uses);
  }
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::int64_t w = layers_[l]->in_dim();
    const std::size_t i = static_cast<std::size_t>(l);
    const LocalId x_rows = halo_sharing_.input[i] == HaloSharing::kOwn ? n_local : n_own;
    const LocalId gx_rows = halo_sharing_.gradient[i] == HaloSharing::kOwn ? n_local : n_own;
    // Compact mode: layer 0 reads positions and codebook (and draws its dropout inside the
    // kernels), so it needs neither a dense input nor a dropout buffer.
    // Sparse input crossing as feature rows: the CSR is built from the owned rows and the
    // received ones directly, so no rank ever holds its layer-0 input dense either.
    x_.emplace_back(l == 0 && (compact_input_ || csr_direct) ? Matrix() : Matrix(x_rows, w, dev_));
    // Layers >= 1 after a ReLU drop out in place (dropout_in_place): no copy either; layer 0's
    // dropped-out features may live in the last layer's input (layer0_dropout_shared).
    const bool dense_dropout = input_dropout_ > 0 &&
                               !(l == 0 && (sparse_input_ || compact_input_)) &&
                               !(l > 0 && dropout_in_place()) &&
                               !(l == 0 && layer0_dropout_shared());
    xd_.emplace_back(dense_dropout ? Matrix(n_local, w, dev_) : Matrix());
    // Layer 0's input gradient is never needed (features are constants).
    gx_.emplace_back(l == 0 ? Matrix() : Matrix(gx_rows, w, dev_));
  }
  if (halo_sharing_.shared_width > 0)
    shared_halo_ = Matrix(part_.num_halo, halo_sharing_.shared_width, dev_);
  // Where layer l's halo rows are: after its owned rows, in the shared buffer, or in the halo
  // rows of the last layer's input or of layer `host`'s matrix.
  auto halo_of = [&](std::vector<Matrix>& m, int host, std::size_t l) {
    if (host == HaloSharing::kOwn) return m[l].view().rows_range(n_own, n_local);
    const bool shared = host == HaloSharing::kShared;
    Matrix& h = shared                             ? shared_halo_
                : host == HaloSharing::kLastInput ? x_.back()
                                                  : m[static_cast<std::size_t>(host)];
    return DenseView{h.data() + (shared ? 0 : n_own * h.cols()), part_.num_halo,
                     layers_[l]->in_dim()};
  };
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    x_halo_.push_back(l == 0 ? DenseView{} : halo_of(x_, halo_sharing_.input[l], l));
    gx_halo_.push_back(l == 0 ? DenseView{} : halo_of(gx_, halo_sharing_.gradient[l], l));
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
  if (cfg_.exchange == ExchangeMode::sync) {
    // One exchange in flight at a time: one set of exchange buffers, sized for the widest
    // exchange, serves every layer and direction (the others keep theirs across epochs).
    std::vector<HaloExchange::Shape> shapes;
    if (!compact_input_ && !feature_rows_exchange() && !features_exchange_)
      shapes.push_back({0, Direction::forward, layers_[0]->in_dim()});
    for (int l = 1; l < cfg_.layers; ++l) {
      shapes.push_back({l, Direction::forward, layers_[l]->in_dim()});
      shapes.push_back({l, Direction::backward, layers_[l]->in_dim()});
    }
    exchange_->share_workspaces(shapes);
  }
  logits_ = Matrix(n_own, layers_.back()->out_dim(), dev_);
  glogits_ = Matrix(n_own, layers_.back()->out_dim(), dev_);
  labels_ = Buffer<std::int32_t>::from_host(part_.labels, dev_);
  label_matrix_ = Buffer<std::uint8_t>::from_host(part_.label_matrix, dev_);
  train_mask_ = Buffer<std::uint8_t>::from_host(part_.train_mask, dev_);
  val_mask_ = Buffer<std::uint8_t>::from_host(part_.val_mask, dev_);

  // Layer-0 input: owned features, then the halo features, exchanged once.
  feature_bytes_.stored = part_.sparsified() ? static_cast<std::uint64_t>(part_.sparse_features.bytes())
                                             : part_.features.size() * sizeof(float);
  feature_bytes_.stored_dense = static_cast<std::uint64_t>(n_own) *
                                static_cast<std::uint64_t>(part_.num_features()) * sizeof(float);
  if (compact_input_) {
    SparseFeatures& sf = part_.sparse_features;
    // Every decoded row holds the same values (the codebook) at other columns, so its sum is
    // the codebook's sum: row normalisation divides the codebook by it, exactly as
    // row_normalize divides each decoded row.
    if (cfg_.row_normalize_features) {
      double sum = 0;
      for (const float v : sf.codebook) sum += v;
      if (sum != 0) {
        const float inv = static_cast<float>(1.0 / sum);
        for (float& v : sf.codebook) v *= inv;
      }
    }
    x0_slots_ = sf.layout.slots();
    x0_pos_host_.assign(static_cast<std::size_t>(static_cast<std::int64_t>(n_local) * x0_slots_), 0);
    std::copy(sf.positions.begin(), sf.positions.end(), x0_pos_host_.begin());
    x0_codebook_ = Buffer<float>::from_host(sf.codebook, dev_);
    x0_slot_base_ = Buffer<std::int32_t>::from_host(sf.layout.slot_base, dev_);
    part_.sparse_features = SparseFeatures{};
    return;
  }
  if (cfg_.row_normalize_features) row_normalize(part_.features);
  if (csr_direct) {
    x0_host_ = std::make_unique<HostCsr>(part_.num_features());
    const std::span<const float> f = part_.features.host();
    for (LocalId r = 0; r < n_own; ++r)
      x0_host_->append_dense(f.data() + static_cast<std::int64_t>(r) * part_.num_features());
  } else {
    const Matrix f = part_.features.clone(dev_);
    kernels::copy(*dev_, f.view(), x_[0].view().rows_range(0, n_own));
  }
  part_.features = Matrix();  // x_[0] (or the owned rows' CSR) is all we need from here on
}

void Trainer::exchange_features_once() {
  // Layer-0 halo rows are features: they never change, so they cross once, before epoch 0.
  // Kept out of the constructor so that a constructor error on one rank cannot leave the others
  // waiting in this exchange.
  if (features_exchanged_) return;
  const LocalId n_own = part_.num_owned, n_local = part_.num_local();
  if (compact_input_) {
    exchange_compact_features();
    return;
  }
  DenseView x0 = x_[0].view();
  traffic_.reset();
  if (feature_rows_exchange()) {
    exchange_feature_rows();
  } else {
    HaloExchange& ex = features_exchange_ ? *features_exchange_ : *exchange_;
    ex.start_forward(0, 0, cfg_.seed, x0.rows_range(0, n_own), x0.rows_range(n_own, n_local)).wait();
  }
  feature_exchange_bytes_ = global_bytes(traffic_.total().total());
  features_exchanged_ = true;
  if (sparse_input_) {
    // All local rows, halo included; forward points layer 0 at these values or the dropped ones.
    if (x0_host_) {
      x0_csr_ = x0_host_->to_device(dev_);
      x0_host_.reset();
    } else {
      x0_csr_ = kernels::dense_to_csr(dev_, x_[0].view());
      x_[0] = Matrix();  // the CSR is all layer 0 reads from now on (1.2 GB saved on Physics)
    }
    x0_dropped_ = Buffer<float>(static_cast<std::size_t>(x0_csr_.nnz()), dev_);
  }
  finish_feature_bytes();
}

bool Trainer::dropout_in_place() const {
  // ReLU's backward reads only the sign of its output, and dropout keeps the sign of every entry
  // it keeps (scaled by 1/(1-p) > 0) and zeroes the others, whose gradient dropout zeroes anyway:
  // the ReLU backward through the dropped rows is the same as through the undropped ones, so the
  // activated rows need no copy (ELU's backward reads the value: it keeps the copy). Layer 0's
  // input is the features, needed again next epoch: never in place.
  return activation_ == Activation::relu;
}

bool Trainer::layer0_dropout_shared() const {
  // Layer 0's dropped-out dense features are read by its forward and again by its backward, the
  // last one of the epoch; the last layer's input (layers >= 3; whole: training/halo_sharing.hpp)
  // is written from layer 1's forward on and dead once layer L-1's backward has read it (its
  // halo rows hold the input gradients' halo rows one layer at a time, each sent before the
  // next layer's backward). So the dropped-out features are drawn into that input's memory in
  // the forward and drawn again from their keyed mask just before layer 0's backward: the same
  // values, no buffer of their own.
  const int L = cfg_.layers;
  return input_dropout_ > 0 && !sparse_input_ && !compact_input_ && L >= 3 &&
         layers_[0]->in_dim() <= layers_[static_cast<std::size_t>(L - 1)]->in_dim();
}

DenseView Trainer::layer0_dropout_view() {
  if (!layer0_dropout_shared()) return xd_[0].view();
  return DenseView{x_[static_cast<std::size_t>(cfg_.layers - 1)].data(), part_.num_local(),
                   layers_[0]->in_dim()};
}

void Trainer::draw_layer0_dropout(std::int64_t epoch) {
  const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch), 0};
  kernels::dropout_forward(*dev_, key, graph_.global_ids.data(), input_dropout_, x_[0].view(),
                           layer0_dropout_view());
}

bool Trainer::feature_rows_exchange() const {
  // Exact layer-0 rows (no --compress-layer0 codec) unless --dense-features asks for the dense
  // path throughout; the messages are host memory, so a transport that takes device memory
  // (NCCL) keeps the halo exchange. Every rank decides the same from the configuration.
  return cfg_.sparse_features && !cfg_.compress_layer0 && !compact_input_ &&
         !transport_.accepts_device_memory(*dev_);
}

void Trainer::exchange_feature_rows() {
  // The halo rows' features cross once as exact fp32 rows, a sparse row as (column, value) pairs
  // (training/feature_rows.hpp): bag-of-words features cost their non-zeros, not their width.
  const std::int64_t cols = layers_[0]->in_dim();
  const DenseView x0 = x_[0].view();
  std::vector<float> staged(x0_host_ || dev_->is_host() ? 0 : static_cast<std::size_t>(cols));
  std::vector<LocalId> nz_col;
  std::vector<float> nz_val;
  auto owned_row = [&](LocalId r) -> FeatureRowView {
    if (x0_host_) return {x0_host_->row_col(r), x0_host_->row_val(r)};
    const float* p = x0.row(r);
    if (!dev_->is_host()) {
      dev_->copy_to_host(staged.data(), p, staged.size() * sizeof(float));
      p = staged.data();
    }
    nz_col.clear();
    nz_val.clear();
    append_nonzeros(p, cols, nz_col, nz_val);
    return {nz_col, nz_val};
  };
  std::vector<std::vector<std::byte>> out;
  std::vector<PeerBytes> sends;
  out.reserve(part_.send.size());
  for (const PeerRows& pr : part_.send) {
    if (pr.rows.empty()) continue;
    out.emplace_back();
    const FeatureRowBytes b = encode_feature_rows(
        static_cast<std::int64_t>(pr.rows.size()), cols,
        [&](std::int64_t i) { return owned_row(pr.rows[static_cast<std::size_t>(i)]); }, out.back());
    traffic_.add(0, Direction::forward, pr.peer, static_cast<std::int64_t>(pr.rows.size()), b.payload,
                 b.metadata + Transport::kVariableHeaderBytes);
    sends.push_back({pr.peer, out.back()});
  }
  std::vector<const PeerRows*> from;
  std::vector<Rank> peers;
  for (const PeerRows& pr : part_.recv) {
    if (pr.rows.empty()) continue;
    from.push_back(&pr);
    peers.push_back(pr.peer);
  }
  std::vector<std::vector<std::byte>> in(peers.size());
  ReceiveRoom room = [&in](std::size_t k, std::size_t bytes) {
    in[k].resize(bytes);
    return std::span<std::byte>(in[k]);
  };
  transport_.exchange_variable(sends, peers, exchange_->tag(0, Direction::forward), room).wait();
  out = {};
  // Decoded in the order of the halo rows: a peer's rows are contiguous and in the order it
  // sends them (local_partition.hpp), and the CSR grows row after row.
  std::vector<std::size_t> order(from.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return from[a]->rows[0] < from[b]->rows[0]; });
  LocalId next = part_.num_owned;
  std::vector<float> rows;
  for (const std::size_t k : order) {
    const PeerRows& pr = *from[k];
    for (std::size_t i = 0; i < pr.rows.size(); ++i)
      GNN_ASSERT(pr.rows[i] == next + static_cast<LocalId>(i), "halo rows of peer ", pr.peer,
                 " are not contiguous after the rows of the peers before it");
    next += static_cast<LocalId>(pr.rows.size());
    const auto n = static_cast<std::int64_t>(pr.rows.size());
    const std::string origin = "feature exchange on rank " + std::to_string(transport_.rank()) +
                               ", message from rank " + std::to_string(pr.peer);
    if (x0_host_) {
      decode_feature_rows(in[k], n, cols, nullptr, x0_host_.get(), origin);
    } else if (dev_->is_host()) {
      decode_feature_rows(in[k], n, cols, x0.row(pr.rows[0]), nullptr, origin);
    } else {
      rows.resize(static_cast<std::size_t>(n * cols));
      decode_feature_rows(in[k], n, cols, rows.data(), nullptr, origin);
      dev_->copy_from_host(x0.row(pr.rows[0]), rows.data(), rows.size() * sizeof(float));
    }
    in[k] = {};
  }
  GNN_ASSERT(next == part_.num_local(), "the halo rows of rank ", transport_.rank(),
             " are not all received");
}

void Trainer::exchange_compact_features() {
  // The halo rows' positions (slots bytes per row) cross once; the codebook is the same on every
  // rank (it came with the partition), so nothing else does.
  const auto slots = static_cast<std::size_t>(x0_slots_);
  std::vector<std::vector<std::byte>> out(part_.send.size());
  std::vector<PeerBytes> sends;
  std::vector<PeerBytesMut> recvs;
  for (std::size_t k = 0; k < part_.send.size(); ++k) {
    const PeerRows& pr = part_.send[k];
    out[k].resize(pr.rows.size() * slots);
    for (std::size_t i = 0; i < pr.rows.size(); ++i)
      std::memcpy(out[k].data() + i * slots,
                  x0_pos_host_.data() + static_cast<std::size_t>(pr.rows[i]) * slots, slots);
    sends.push_back({pr.peer, out[k]});
  }
  // A peer's halo rows are contiguous and in the order it sends them (local_partition.hpp).
  for (const PeerRows& pr : part_.recv) {
    if (pr.rows.empty()) continue;
    for (std::size_t i = 1; i < pr.rows.size(); ++i)
      GNN_ASSERT(pr.rows[i] == pr.rows[0] + static_cast<LocalId>(i), "halo rows of peer ", pr.peer,
                 " are not contiguous");
    recvs.push_back({pr.peer, std::span<std::byte>(reinterpret_cast<std::byte*>(x0_pos_host_.data()) +
                                                       static_cast<std::size_t>(pr.rows[0]) * slots,
                                                   pr.rows.size() * slots)});
  }
  traffic_.reset();
  transport_.exchange(sends, recvs, exchange_->tag(0, Direction::forward)).wait();
  for (std::size_t k = 0; k < part_.send.size(); ++k)
    traffic_.add(0, Direction::forward, part_.send[k].peer,
                 static_cast<std::int64_t>(part_.send[k].rows.size()), out[k].size(), 0);
  feature_exchange_bytes_ = global_bytes(traffic_.total().total());
  features_exchanged_ = true;
  x0_pos_ = Buffer<std::uint8_t>::from_host(x0_pos_host_, dev_);
  x0_pos_host_ = {};
  finish_feature_bytes();
}

void Trainer::finish_feature_bytes() {
  // What layer 0 holds for its input on this rank, and the fp32 matrix it stands for.
  const auto n_local = static_cast<std::uint64_t>(part_.num_local());
  const auto width = static_cast<std::uint64_t>(layers_[0]->in_dim());
  FeatureBytes& b = feature_bytes_;
  if (compact_input_) b.memory = x0_pos_.bytes() + x0_codebook_.bytes() + x0_slot_base_.bytes();
  else if (sparse_input_)
    b.memory = x0_csr_.row_ptr().bytes() + x0_csr_.col().bytes() + x0_csr_.val().bytes() +
               x0_dropped_.bytes();
  else b.memory = x_[0].size() * sizeof(float) + xd_[0].size() * sizeof(float);
  b.memory_dense = n_local * width * sizeof(float);
  b.sent = 0;  // the exchange's bytes are summed over ranks already (feature_exchange_bytes_)
  b.sent_dense = static_cast<std::uint64_t>(part_.num_halo) * width * sizeof(float);
  std::int64_t v[5] = {static_cast<std::int64_t>(b.stored), static_cast<std::int64_t>(b.stored_dense),
                       static_cast<std::int64_t>(b.memory), static_cast<std::int64_t>(b.memory_dense),
                       static_cast<std::int64_t>(b.sent_dense)};
  transport_.all_reduce_sum(v, 5);
  b.stored = static_cast<std::uint64_t>(v[0]);
  b.stored_dense = static_cast<std::uint64_t>(v[1]);
  b.memory = static_cast<std::uint64_t>(v[2]);
  b.memory_dense = static_cast<std::uint64_t>(v[3]);
  b.sent_dense = static_cast<std::uint64_t>(v[4]);
  b.sent = feature_exchange_bytes_;
}

Trainer::~Trainer() = default;

bool Trainer::overlap_layer(int l, bool training) const {
  return cfg_.overlap && layers_[static_cast<std::size_t>(l)]->splits() &&
         (!training || policy_->overlaps());
}

LocalRows Trainer::input_rows(int l) {
  return {x_[static_cast<std::size_t>(l)].view().rows_range(0, part_.num_owned),
          x_halo_[static_cast<std::size_t>(l)]};
}

LocalRows Trainer::dropout_rows(int l) {
  return LocalRows::of(xd_[static_cast<std::size_t>(l)].view(), part_.num_owned);
}

LocalRows Trainer::gradient_rows(int l) {
  return {gx_[static_cast<std::size_t>(l)].view().rows_range(0, part_.num_owned),
          gx_halo_[static_cast<std::size_t>(l)]};
}

namespace {
/// One view of owned and halo rows that are one matrix (layers that do not split).
DenseView whole(const LocalRows& r) {
  GNN_ASSERT(r.contiguous(),
             "a layer that does not split got its halo rows apart from its owned rows");
  return {r.owned.data, r.rows(), r.cols()};
}
}  // namespace

void Trainer::dropout_part(std::int64_t epoch, int l, bool halo, bool backward, ConstDenseView src,
                           DenseView dst, bool relu) {
  const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch),
                   static_cast<std::uint64_t>(l)};
  const GlobalId* ids = graph_.global_ids.data() + (halo ? part_.num_owned : 0);
  if (backward) kernels::dropout_backward(*dev_, key, ids, input_dropout_, src, dst);
  else if (relu) kernels::relu_dropout_forward(*dev_, key, ids, input_dropout_, src, dst);
  else kernels::dropout_forward(*dev_, key, ids, input_dropout_, src, dst);
}

void Trainer::layer_forward(int l, LocalRows in, DenseView y, const ForwardContext& ctx) {
  Layer& layer = *layers_[static_cast<std::size_t>(l)];
  if (!layer.splits()) {
    layer.forward(graph_, whole(in), y, ctx);
    return;
  }
  layer.forward_owned(graph_, in.owned, y, ctx, {});
  layer.forward_halo(graph_, in.halo, y, ctx);
}

void Trainer::layer_backward(int l, ConstDenseView gy, LocalRows gx) {
  Layer& layer = *layers_[static_cast<std::size_t>(l)];
  if (!layer.splits()) {
    layer.backward(graph_, gy, whole(gx));
    return;
  }
  layer.backward_halo(graph_, gy, gx.halo);
  layer.backward_owned(graph_, gy, gx.owned, {});
}

void Trainer::forward(std::int64_t epoch, bool training) {
  const LocalId n_own = part_.num_owned;
  const bool residual = cfg_.architecture == Architecture::residual;
  const bool drop = training && input_dropout_ > 0;
  // A ReLU followed by dropout in place on one rank: the next layer's dropout pass applies the
  // ReLU too (relu_dropout_forward, the same bits), one pass over the rows instead of two. With
  // peers the exchange must send the activated, undropped rows, so the ReLU runs on its own.
  const bool relu_in_dropout =
      drop && !residual && dropout_in_place() && transport_.size() == 1;
  for (int l = 0; l < cfg_.layers; ++l) {
    ForwardContext ctx{training, cfg_.seed, epoch, l};
    const bool last = l + 1 == cfg_.layers;
    DenseView y = last ? logits_.view() : x_[l + 1].view().rows_range(0, n_own);
    if (l == 0) {
      // In sparse and compact mode layer 0's dense input is gone; only its shape is passed.
      DenseView x = (sparse_input_ || compact_input_)
                        ? DenseView{nullptr, part_.num_local(), layers_[0]->in_dim()}
                        : x_[0].view();
      ConstDenseView in = x;
      if (compact_input_) {
        // Layer 0 reads positions and codebook; the kernels draw the dense path's dropout mask.
        const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch), 0};
        layers_[0]->set_sparse_input(CompactView{part_.num_local(), layers_[0]->in_dim(), x0_slots_,
                                                 x0_pos_.data(), x0_codebook_.data(),
                                                 x0_slot_base_.data(), drop ? input_dropout_ : 0.0f,
                                                 key, graph_.global_ids.data()});
      } else if (sparse_input_) {
        // Layer 0 reads the CSR (x only gives the shape); dropout draws the dense path's mask on
        // the stored entries only.
        CsrView xs = x0_csr_.view();
        if (drop) {
          const RngKey key{cfg_.seed, RngPurpose::dropout, static_cast<std::uint64_t>(epoch), 0};
          kernels::dropout_csr(*dev_, key, graph_.global_ids.data(), input_dropout_, xs,
                               x0_dropped_.data());
          xs.val = x0_dropped_.data();
        }
        layers_[0]->set_sparse_input(xs);
      } else if (drop) {
        draw_layer0_dropout(epoch);
        in = layer0_dropout_view();
      }
      layers_[0]->forward(graph_, in, y, ctx);
    } else {
      // Overlap (docs/training.md "Overlap"): the exchange of the halo rows is posted, the layer
      // computes what needs only owned rows while it is in flight, then the rest.
      const LocalRows x = input_rows(l);
      const bool split = overlap_layer(l, training);
      Request rows;
      if (split) {
        rows = training ? policy_->start_forward(l, x) : policy_->start_forward_eval(l, epoch, x);
      } else {
        if (training) policy_->forward(l, x);
        else policy_->forward_eval(l, epoch, x);
      }
      // Dropout: in place after ReLU (dropout_in_place), else into the layer's dropout copy;
      // with overlap the owned rows now, the halo rows once they have arrived.
      const LocalRows in = !drop ? x : dropout_in_place() ? x : dropout_rows(l);
      auto drop_owned = [&] {
        if (drop) dropout_part(epoch, l, false, false, x.owned, in.owned, relu_in_dropout);
      };
      auto drop_halo = [&] {
        if (drop) dropout_part(epoch, l, true, false, x.halo, in.halo, false);
      };
      if (split) {
        const auto t_post = Clock::now();
        drop_owned();
        layers_[l]->forward_owned(graph_, in.owned, y, ctx, [&rows] { rows.progress(); });
        if (training) overlap_s_ += seconds_since(t_post);
        rows.wait();
        drop_halo();
        layers_[l]->forward_halo(graph_, in.halo, y, ctx);
        if (training) ++overlapped_;
      } else {
        drop_owned();
        drop_halo();
        layer_forward(l, in, y, ctx);
      }
    }
    if (!last && !residual && !relu_in_dropout) activation_forward(*dev_, activation_, y);
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
  const bool residual = cfg_.architecture == Architecture::residual;
  const bool drop = input_dropout_ > 0;
  for (int l = cfg_.layers - 1; l >= 0; --l) {
    const bool last = l + 1 == cfg_.layers;
    ConstDenseView gy = last ? ConstDenseView(glogits_.view())
                             : ConstDenseView(gx_[l + 1].view().rows_range(0, n_own));
    // The dropped-out features layer 0 read in the forward, drawn again where they share memory
    // with the last layer's input, whose last reader (layer L-1's backward) is done.
    if (l == 0 && drop && layer0_dropout_shared()) draw_layer0_dropout(epoch);
    // Layer 0's input gradient is not needed (features are constants): ask for none.
    if (l == 0) {
      layers_[0]->backward(graph_, gy, DenseView{});
      break;
    }
    const LocalRows gx = gradient_rows(l);
    // The owned rows' dropout backward after a ReLU with dropout in place reads the activated
    // rows instead of drawing the mask (relu_dropout_backward: y > 0 only where dropout kept the
    // entry), and is then the ReLU's backward too; entries it zeroes where y <= 0 are zeroed again
    // by the ReLU's backward after the peers' gradients are added. With no peer (one rank)
    // nothing is added, and that second pass would change nothing: it is skipped.
    const ConstDenseView activated = x_[static_cast<std::size_t>(l)].view().rows_range(0, n_own);
    const bool fused = drop && !residual && dropout_in_place();
    auto drop_owned = [&] {
      if (fused)
        kernels::relu_dropout_backward(*dev_, input_dropout_, activated, gx.owned, gx.owned);
      else if (drop) dropout_part(epoch, l, false, true, gx.owned, gx.owned, false);
    };
    auto drop_halo = [&] {
      if (drop) dropout_part(epoch, l, true, true, gx.halo, gx.halo, false);
    };
    if (overlap_layer(l, true)) {
      // Overlap: the halo rows' gradients first, sent while the owned rows' are computed; the
      // peers' gradients are added into the owned rows when those are final.
      layers_[l]->backward_halo(graph_, gy, gx.halo);
      drop_halo();
      Request grads = policy_->start_backward(l, gx);
      const auto t_post = Clock::now();
      layers_[l]->backward_owned(graph_, gy, gx.owned, [&grads] { grads.progress(); });
      drop_owned();
      overlap_s_ += seconds_since(t_post);
      grads.wait();
      ++overlapped_;
    } else {
      layer_backward(l, gy, gx);
      drop_owned();
      drop_halo();
      policy_->backward(l, gx);
    }
    // Through the activation of layer l-1, whose output is the owned part of x_l.
    if (!residual && !(fused && transport_.size() == 1))
      activation_backward(*dev_, activation_, activated, gx.owned);
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

std::vector<Parameter*> Trainer::parameters() const {
  std::vector<Parameter*> params;
  for (const auto& layer : layers_)
    for (Parameter* p : layer->parameters()) params.push_back(p);
  return params;
}

SplitScores Trainer::scores(bool eval_all) {
  if (metric_ == MetricKind::roc_auc) return roc_auc_scores(eval_all);
  auto c = score_counts(eval_all);
  transport_.all_reduce_sum(c.data(), c.size());
  return scores_from_counts(c, part_.multilabel);
}

SplitScores Trainer::roc_auc_scores(bool eval_all) {
  // Node v's score (logit 1 - logit 0, monotone in the softmax probability of class 1) and code
  // (1 + 2 * split + label; 0 = in no scored split) land at global id v on the rank that owns
  // it and are zero elsewhere, so the sums over ranks are exact copies.
  const std::int64_t n = part_.global_num_nodes;
  std::vector<double> score(static_cast<std::size_t>(n), 0.0);
  std::vector<std::int64_t> code(static_cast<std::size_t>(n), 0);
  const std::vector<float> logits = logits_.to_host();
  const std::vector<std::uint8_t>* masks[3] = {&part_.train_mask, &part_.val_mask, &part_.test_mask};
  for (int s = 0; s < (eval_all ? 3 : 1); ++s) {
    for (LocalId i = 0; i < part_.num_owned; ++i) {
      if (!(*masks[s])[i] || part_.labels[i] < 0) continue;
      const GlobalId v = part_.global_ids[i];
      score[v] = static_cast<double>(logits[2 * i + 1]) - static_cast<double>(logits[2 * i]);
      code[v] = 1 + 2 * s + part_.labels[i];
    }
  }
  transport_.all_reduce_sum(score.data(), score.size());
  transport_.all_reduce_sum(code.data(), code.size());
  const Rank np = transport_.size();
  if (np > 1)
    metric_bytes_ += static_cast<std::uint64_t>(2.0 * (np - 1) / np * n *
                                                (sizeof(double) + sizeof(std::int64_t)));
  SplitScores out;
  double* dst[3] = {&out.train, &out.val, &out.test};
  for (int s = 0; s < (eval_all ? 3 : 1); ++s) {
    std::vector<double> sc;
    std::vector<std::uint8_t> pos;
    for (std::int64_t v = 0; v < n; ++v) {
      if (code[v] == 0 || (code[v] - 1) / 2 != s) continue;
      sc.push_back(score[v]);
      pos.push_back(static_cast<std::uint8_t>((code[v] - 1) % 2));
    }
    *dst[s] = binary_roc_auc(sc, pos);
  }
  return out;
}

double Trainer::validation_loss() {
  // glogits_ is free outside the training step: the gradient written here is not used.
  const float scale = 1.0f;
  double local = 0;
  if (part_.multilabel) {
    local = kernels::sigmoid_bce(*dev_, logits_.view(), label_matrix_.data(), val_mask_.data(),
                                 scale, glogits_.view());
  } else {
    local = kernels::softmax_cross_entropy(*dev_, logits_.view(), labels_.data(), val_mask_.data(),
                                           scale, glogits_.view());
  }
  transport_.all_reduce_sum(&local, 1);
  return part_.global_val > 0 ? local / static_cast<double>(part_.global_val) : 0.0;
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
  SplitScores s = scores(true);
  s.val_loss = validation_loss();
  // Parameters are the same on every rank: so is the penalty.
  if (cfg_.val_loss_l2) s.val_loss += optimizer_->l2_penalty();
  return s;
}

EpochMetrics Trainer::run_epoch(std::int64_t epoch, bool evaluate_now) {
  EpochMetrics m;
  m.epoch = epoch;
  exchange_->reset_timers();
  overlap_s_ = 0;
  overlapped_ = 0;
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

  m.lr = optimizer_->lr();
  metric_bytes_ = 0;
  m.train_score = scores(false).train;
  const double comm_s = exchange_->wait_seconds() + allreduce_s_;
  const double codec_s = exchange_->codec_seconds();
  const std::uint64_t train_bytes = traffic_.total().total() + allreduce_bytes_ + metric_bytes_;
  // Per layer and direction, summed over ranks (collective).
  m.traffic = traffic_.sum_over_ranks(transport_).to_json();
  m.links = link_metrics();

  // Evaluation traffic is real traffic, but it is not part of the training step: count it apart.
  if (evaluate_now) {
    traffic_.reset();
    metric_bytes_ = 0;
    m.eval = evaluate(epoch);
    m.eval_bytes_sent = global_bytes(traffic_.total().total() + metric_bytes_);
  }

  m.overlapped_exchanges = overlapped_;
  double t[5] = {step_s, step_s - comm_s - codec_s, comm_s, codec_s, overlap_s_};
  double tmax[2] = {step_s, static_cast<double>(dev_->peak_allocated_bytes())};
  transport_.all_reduce_max(tmax, 2);
  transport_.all_reduce_sum(t, 5);
  const double np = transport_.size();
  m.epoch_s = tmax[0];
  m.compute_s = t[1] / np;
  m.comm_s = t[2] / np;
  m.codec_s = t[3] / np;
  m.overlap_s = t[4] / np;
  m.bytes_sent = global_bytes(train_bytes);
  m.device_peak_bytes = static_cast<std::uint64_t>(tmax[1]);
  m.synchronous = policy_->synchronous_epoch();
  const HaloAges ages = policy_->ages().sum_over_ranks(transport_);
  m.max_staleness = ages.max_age();
  m.halo_age = ages.to_json();
  m.policy = policy_->summarize(transport_);
  return m;
}

void TrainerState::save(StateWriter& w) const {
  StateWriter tw = w.sub("trainer");
  tw.put_int("next_epoch", next_epoch);
  tw.put_int("best_epoch", best_epoch);
  tw.put_double("best_val", best_val);
  tw.put_double("test_at_best_val", test_at_best_val);
  tw.put_int("bytes_sent", static_cast<std::int64_t>(bytes_sent));
  tw.put_double("train_s", train_s);
  tw.put_double("best_val_loss", best_val_loss);
  tw.put_int("final_epoch", final_epoch);
  tw.put_double("final_train", final_scores.train);
  tw.put_double("final_val", final_scores.val);
  tw.put_double("final_test", final_scores.test);
  tw.put_double("final_val_loss", final_scores.val_loss);
}

void TrainerState::load(const StateReader& r) {
  const StateReader t = r.sub("trainer");
  next_epoch = t.get_int("next_epoch");
  GNN_CHECK_INPUT(next_epoch >= 0, r.origin(), "negative epoch count ", next_epoch);
  best_epoch = static_cast<int>(t.get_int("best_epoch"));
  best_val = t.get_double("best_val");
  test_at_best_val = t.get_double("test_at_best_val");
  bytes_sent = static_cast<std::uint64_t>(t.get_int("bytes_sent"));
  train_s = t.get_double("train_s");
  best_val_loss = t.get_double("best_val_loss");
  final_epoch = static_cast<int>(t.get_int("final_epoch"));
  final_scores.train = t.get_double("final_train");
  final_scores.val = t.get_double("final_val");
  final_scores.test = t.get_double("final_test");
  final_scores.val_loss = t.get_double("final_val_loss");
}

void Trainer::save_parameters(StateWriter& w) const {
  for (const auto& layer : layers_)
    for (const Parameter* p : layer->parameters()) w.put(p->name, p->value);
}

void Trainer::load_parameters(const StateReader& r) {
  for (auto& layer : layers_)
    for (Parameter* p : layer->parameters()) r.get(p->name, p->value);
}

void Trainer::save_state(StateWriter& w) {
  StateWriter params = w.sub("params");
  save_parameters(params);
  StateWriter opt = w.sub("optimizer");
  optimizer_->save_state(opt);
  StateWriter pol = w.sub("policy");
  policy_->save_state(pol);
  state_.save(w);
  StateWriter protocol = w.sub("protocol");
  selection_.save(protocol);
  schedule_.save(protocol);
  best_.save_state(protocol, parameters());
}

void Trainer::load_state(const StateReader& r) {
  load_parameters(r.sub("params"));
  optimizer_->load_state(r.sub("optimizer"));
  policy_->load_state(r.sub("policy"));
  state_.load(r);
  const StateReader protocol = r.sub("protocol");
  selection_.load(protocol);
  schedule_.load(protocol);
  best_.load_state(protocol, parameters());
}

FinalMetrics Trainer::run(const std::function<void(const EpochMetrics&)>& on_epoch,
                          const std::function<void(std::int64_t)>& after_epoch) {
  FinalMetrics f;
  const auto t0 = Clock::now();
  exchange_features_once();
  f.feature_exchange_bytes = feature_exchange_bytes_;
  f.feature_bytes = feature_bytes_;
  f.feature_form = compact_input_ ? "sparsified" : sparse_input_ ? "csr" : "dense";
  f.feature_exchange_codec = compact_input_           ? std::string("positions")
                              : feature_rows_exchange() ? std::string("fp32-rows")
                                                        : (features_exchange_ ? *features_exchange_ : *exchange_)
                                                              .codec(0, Direction::forward)
                                                              .name();
  // The protocol (docs/training.md): the schedule sets each epoch's rate, every evaluation goes
  // through model selection (the best one's parameters are kept when they will be restored),
  // and patience ends training early. All decisions use all-reduced values: every rank agrees.
  // Their state lives in the trainer, so a checkpoint carries it and a resumed run continues
  // exactly where the interrupted one was.
  const std::vector<Parameter*> params = parameters();
  const double resumed_s = state_.train_s;
  for (std::int64_t e = state_.next_epoch; e < cfg_.epochs; ++e) {
    optimizer_->set_lr(schedule_.lr(e));
    const bool eval_now = (e + 1) % cfg_.eval_every == 0 || e + 1 == cfg_.epochs;
    EpochMetrics m = run_epoch(e, eval_now);
    state_.bytes_sent += m.bytes_sent + m.eval_bytes_sent;
    bool stop = false;
    if (m.eval) {
      const ModelSelection::Verdict verdict = selection_.update(e, m.eval->val, m.eval->val_loss);
      if (verdict.best) {
        state_.best_epoch = static_cast<int>(e);
        state_.best_val = m.eval->val;
        state_.best_val_loss = m.eval->val_loss;
        state_.test_at_best_val = m.eval->test;
        if (cfg_.restore_best) best_.save(params);
      }
      schedule_.on_evaluation(e, verdict.progress);
      state_.final_scores = *m.eval;
      state_.final_epoch = static_cast<int>(e);
      stop = selection_.should_stop(e);
    }
    state_.next_epoch = e + 1;
    state_.train_s = resumed_s + seconds_since(t0);
    if (on_epoch) on_epoch(m);
    if (!std::isfinite(m.loss)) {
      char lr[32];
      std::snprintf(lr, sizeof lr, "%g", static_cast<double>(cfg_.lr));
      throw TrainingDiverged(e, m.loss,
                             "training diverged: the loss of epoch " + std::to_string(e) + " is " +
                                 (std::isnan(m.loss) ? "nan" : "infinite") +
                                 " (try a smaller --lr than " + lr + ")");
    }
    if (after_epoch) after_epoch(e);
    if (stop) {
      f.early_stopped = e + 1 < cfg_.epochs;
      break;
    }
  }
  policy_->finish();
  f.epochs_run = static_cast<int>(state_.next_epoch);
  f.best_epoch = state_.best_epoch;
  f.best_val = state_.best_val;
  f.best_val_loss = state_.best_val_loss;
  f.test_at_best_val = state_.test_at_best_val;
  f.final_scores = state_.final_scores;
  f.final_epoch = state_.final_epoch;
  f.total_bytes_sent = feature_exchange_bytes_ + state_.bytes_sent;
  if (cfg_.restore_best && !best_.empty()) {
    // Evaluated with the best epoch's key, so stochastic codecs draw what they drew then: the
    // scores equal that evaluation's (tested), now measured on the restored parameters.
    best_.restore(params);
    traffic_.reset();
    metric_bytes_ = 0;
    f.final_scores = evaluate(f.best_epoch);
    f.total_bytes_sent += global_bytes(traffic_.total().total() + metric_bytes_);
    f.final_epoch = f.best_epoch;
    f.restored = true;
  }
  f.total_s = resumed_s + seconds_since(t0);
  double t = f.total_s;
  transport_.all_reduce_max(&t, 1);
  f.total_s = t;
  return f;
}

}  // namespace halognn
