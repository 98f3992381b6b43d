#include "training/memory_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <span>

#include "compress/codec.hpp"
#include "compress/codec_plan.hpp"
#include "core/error.hpp"
#include "training/halo_sharing.hpp"

namespace halognn {
namespace {

// Sizes are added up in double: a forged partition or an absurd option may ask for more than
// 2^64 bytes, and the estimate must say so rather than wrap around.
constexpr double kF = 4;  // float
constexpr double kI = 4;  // int32 (LocalId, CSR offsets)
constexpr double kL = 8;  // int64 (GlobalId, degrees)

std::uint64_t to_bytes(double b) {
  if (!(b > 0)) return 0;
  if (b >= 1.8e19) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(std::llround(b));
}

/// Bytes of the encoded blocks of one exchange side: one block per peer.
double encoded(const Codec& codec, const std::vector<std::int64_t>& counts, std::int64_t cols) {
  double b = 0;
  if (cols <= 0) return 0;
  for (std::int64_t c : counts)
    if (c > 0) b += static_cast<double>(codec.encoded_size(c, cols).total());
  return b;
}

/// One layer's dimensions as the Trainer builds the stack.
struct LayerDims {
  std::int64_t in = 0, out = 0;  ///< LayerConfig in_dim / out_dim (per head for GAT)
  std::int64_t heads = 1;
  std::int64_t mlp = 0;          ///< GIN: the MLP's hidden width
  bool concat = false;
  std::int64_t out_dim() const { return concat ? heads * out : out; }  ///< next layer's input
};

}  // namespace

std::int64_t PartitionShape::total_send() const {
  return std::accumulate(send_counts.begin(), send_counts.end(), std::int64_t{0});
}

std::int64_t PartitionShape::total_recv() const {
  return std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t{0});
}

PartitionShape PartitionShape::of(const LocalPartition& p) {
  PartitionShape s;
  s.num_owned = p.num_owned;
  s.num_halo = p.num_halo;
  s.adj_nnz = static_cast<std::int64_t>(p.col.size());
  s.num_features = p.num_features();
  s.sparse_slots = p.sparsified() ? p.sparse_features.layout.slots() : 0;
  s.num_classes = p.num_classes;
  s.global_nodes = p.global_num_nodes;
  s.multilabel = p.multilabel;
  const std::span<const float> f = p.features.host();
  std::int64_t nnz = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : nnz)
  for (std::size_t i = 0; i < f.size(); ++i) nnz += f[i] != 0.0f;
  s.feature_nnz = nnz;
  s.send_contiguous = true;
  LocalId next = 0;
  for (const PeerRows& pr : p.send) {
    s.send_counts.push_back(static_cast<std::int64_t>(pr.rows.size()));
    for (LocalId r : pr.rows) s.send_contiguous = s.send_contiguous && r == next++;
  }
  for (const PeerRows& pr : p.recv) s.recv_counts.push_back(static_cast<std::int64_t>(pr.rows.size()));
  return s;
}

std::uint64_t MemoryEstimate::steady(MemorySpace space) const {
  std::uint64_t b = 0;
  for (const MemoryTerm& t : terms)
    if (t.space == space) b += t.bytes;
  return b;
}

const MemoryTerm& MemoryEstimate::largest() const {
  GNN_ASSERT(!terms.empty(), "empty memory estimate");
  return *std::max_element(terms.begin(), terms.end(),
                           [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes < b.bytes; });
}

void add_process_baseline(MemoryEstimate& e, std::uint64_t bytes) {
  e.terms.push_back({"program and libraries", "measured at start-up (the binary, its shared libraries, MPI)",
                     MemorySpace::host, bytes});
  e.peak_host += bytes;
  e.peak_total += bytes;
}

Json MemoryEstimate::to_json() const {
  Json t = Json::array();
  for (const MemoryTerm& m : terms)
    t.push_back({{"name", m.name}, {"space", m.space == MemorySpace::host ? "host" : "device"},
                 {"bytes", m.bytes}, {"driver", m.driver}});
  Json j = Json::object();
  j["terms"] = std::move(t);
  j["startup_host"] = startup_host;
  j["startup_device"] = startup_device;
  j["epoch_host"] = epoch_host;
  j["epoch_device"] = epoch_device;
  j["peak_host"] = peak_host;
  j["peak_device"] = peak_device;
  j["peak_total"] = peak_total;
  return j;
}

MemoryEstimate estimate_training_memory(const TrainConfig& cfg, const PartitionShape& s,
                                        const MemoryPlacement& where) {
  const double own = static_cast<double>(s.num_owned), halo = static_cast<double>(s.num_halo);
  const double nl = own + halo, nnz = static_cast<double>(s.adj_nnz);
  const double feat = static_cast<double>(s.num_features);
  const double classes = static_cast<double>(s.num_classes);
  const double sends = static_cast<double>(s.total_send()), recvs = static_cast<double>(s.total_recv());
  const bool gat = cfg.model == ModelKind::gat;
  const bool gin = cfg.model == ModelKind::gin;
  const bool residual = cfg.architecture == Architecture::residual;
  const int L = cfg.layers;

  // The layer stack (Trainer's constructor).
  std::vector<LayerDims> dims(static_cast<std::size_t>(L));
  std::int64_t in = s.num_features;
  for (int l = 0; l < L; ++l) {
    const bool last = l + 1 == L;
    LayerDims& d = dims[static_cast<std::size_t>(l)];
    d.in = in;
    d.out = last ? s.num_classes : cfg.hidden;
    if (gat) d.heads = last && !residual ? cfg.output_heads : cfg.heads;
    d.mlp = cfg.hidden;
    d.concat = !last;
    in = gat && !residual ? d.out_dim() : d.out;  // a residual GAT block's heads share its width
  }
  // Layer 0 reads CSR when under 10% of the owned feature entries are non-zero (Trainer).
  const double owned_entries = own * feat;
  const double density = owned_entries > 0 ? static_cast<double>(s.feature_nnz) / owned_entries : 0;
  // Sparsified features (a partition written with --sparsify-features) are read as stored.
  const bool compact = s.sparse_slots > 0;
  const double slots = static_cast<double>(s.sparse_slots);
  const bool sparse = !compact && cfg.sparse_features && density < 0.1;
  // Exact layer-0 rows cross once as feature rows (training/feature_rows.hpp) through host
  // messages, not the halo exchange's buffers (Trainer::feature_rows_exchange); sparse, the CSR
  // is then built from the owned rows and the received ones, and no dense input exists.
  const bool feature_rows = !compact && cfg.sparse_features && !cfg.compress_layer0 &&
                            !where.transport_takes_device_memory;
  const bool csr_direct = sparse && feature_rows;
  // Residual blocks drop out inside (their buffers are below); the trainer drops no layer input.
  const bool dropout = cfg.dropout > 0 && !residual;
  // Layers >= 1 after a ReLU drop out in place (Trainer::dropout_in_place): no dropout copy.
  const bool dropout_copy = dropout && cfg.resolved_activation() != Activation::relu;
  const bool pipelined = cfg.exchange == ExchangeMode::pipelined;
  const bool refresh = cfg.exchange == ExchangeMode::refresh;

  // Partition arrays the Trainer keeps on the host, and the halo plan's host copies.
  // The adjacency (on the host as read, and on the device) lives until every layer has built its
  // operator from it, inside the Trainer's constructor.
  const double adjacency = kI * (own + 1) + kI * nnz;
  double partition_host = kL * nl + kL * nl + kI * (sends + recvs) +
                          (s.multilabel ? own * classes : kI * own) + 3 * own +
                          (kI + kL) * (sends + recvs);
  // LocalGraph (degrees, global ids) and the plan's index arrays.
  double graph = kF * nl + kL * nl +
                 (kI + kL) * (sends + recvs);
  // One normalised operator and its transpose, shared by every layer (shared_graph_operator):
  // GCN A+I with values, SAGE A with values, GAT A+I structure only, GIN A structure only; split
  // by owned and halo columns (rows of the transpose), except GAT's, which is whole and has the
  // transpose-to-original entry map (models/local_graph.hpp).
  double operators = 0, attention = 0;
  const double op_nnz = (cfg.model == ModelKind::sage || gin) ? nnz : nnz + own;
  const double with_values = (gat || gin) ? 0 : 1;
  // GAT per edge and head: the coefficients, their gradients, and the attention-dropout
  // multipliers when --attention-dropout is on.
  const double per_edge_head = cfg.attention_dropout > 0 ? 3 : 2;
  if (gat) {  // OperatorForm::whole
    operators = kI * (own + 1) + kI * op_nnz + with_values * kF * op_nnz +  // a
                kI * (nl + 1) + kI * op_nnz + with_values * kF * op_nnz +   // a_t
                kI * op_nnz;                                                 // t_to_a
  } else {  // OperatorForm::split: a_owned, a_halo by column; t_owned, t_halo by row
    operators = 3 * kI * (own + 1) + kI * (halo + 1) +
                2 * (kI * op_nnz + with_values * kF * op_nnz);
  }
  double most_heads = 0;
  for (int l = 0; l < L; ++l) {
    const auto heads = static_cast<double>(dims[static_cast<std::size_t>(l)].heads);
    if (gat) attention += per_edge_head * kF * op_nnz * heads;
    most_heads = std::max(most_heads, heads);
  }
  // The CPU attention backward's transposed coefficients of every head: kernel scratch, one
  // buffer the layers share, host memory outside the device's buffers (the CUDA kernels keep none).
  const double attention_scratch = gat && where.device_is_host ? kF * op_nnz * most_heads : 0;
  // Parameters: value and gradient of every declared parameter; optimiser state of the trained
  // ones (Adam: two moments; SGD: a velocity when momentum > 0). The biases are declared always
  // and trained unless --no-bias. With the best-model restore, a copy of every trained value is
  // kept during training.
  double params = 0, largest_param = 0, snapshot = 0;
  const double state = cfg.optimizer == OptimizerKind::adam ? 2 : (cfg.momentum > 0 ? 1 : 0);
  auto declare = [&](double n, bool trained) {
    params += kF * n * (2 + (trained ? state : 0));
    if (trained) snapshot += kF * n;
    largest_param = std::max(largest_param, kF * n);
  };
  const double hid = static_cast<double>(cfg.hidden);
  for (int l = 0; l < L; ++l) {
    const LayerDims& d = dims[static_cast<std::size_t>(l)];
    const double in = static_cast<double>(d.in), out = static_cast<double>(d.out);
    if (residual) {
      // models/residual_block.cpp: the input linear layer (first block), the layer norm, the
      // feed-forward (SAGE: two first weights), the head (last block); every one trained.
      if (l == 0) {
        declare(in * hid, true);
        declare(hid, true);
      }
      declare(hid, true);
      declare(hid, true);
      if (gat) {  // the attention's linear map, its source scores (with bias), target scores
        const double heads = static_cast<double>(d.heads);
        declare(hid * hid, true);
        declare(hid, true);
        declare(hid * heads, true);
        declare(heads, true);
        declare(hid * heads, true);
      }
      declare(hid * hid, true);
      if (cfg.model == ModelKind::sage) declare(hid * hid, true);
      declare(hid, true);
      declare(hid * hid, true);
      declare(hid, true);
      if (l + 1 == L) {
        declare(hid, true);
        declare(hid, true);
        declare(hid * out, true);
        declare(out, true);
      }
    } else if (gin) {
      // W1, b1, W2, b2; eps (1 x 1) trained only with --train-eps.
      const double mlp = static_cast<double>(d.mlp);
      declare(in * mlp, true);
      declare(mlp * out, true);
      declare(mlp, cfg.bias);
      declare(out, cfg.bias);
      declare(1, cfg.train_eps);
    } else if (cfg.model == ModelKind::gcn) {
      declare(in * out, true);
      declare(out, cfg.bias);
    } else if (cfg.model == ModelKind::sage) {
      declare(in * out, true);
      declare(in * out, true);
      declare(out, cfg.bias);
    } else {
      const double width = static_cast<double>(d.heads) * out;
      declare(in * width, true);
      declare(width, true);
      declare(width, true);
      declare(static_cast<double>(d.out_dim()), cfg.bias);
    }
  }

  // Layer-0 input: dense owned+halo features, or their CSR (halo rows assumed as dense as the
  // owned ones) plus the dropped-out values; the dense dropout copy when dense.
  const double x0_dense = kF * nl * feat;
  const double csr_nnz = density * nl * feat;
  const double x0_sparse = kI * (nl + 1) + (kI + kF) * csr_nnz + kF * csr_nnz;
  // Sparsified: one byte per position and row, the codebook and each slot's chunk start.
  const double x0_compact = nl * slots + (kF + kI) * slots;
  // Layers >= 3 whose last layer is at least as wide as the features keep layer 0's dropped-out
  // features in the last layer's input (Trainer::layer0_dropout_shared): no copy.
  const bool xd0_shared = L >= 3 && dims[0].in <= dims[static_cast<std::size_t>(L - 1)].in;
  const double xd0 = (dropout && !sparse && !compact && !xd0_shared) ? kF * nl * feat : 0;
  const double x0_steady = compact ? x0_compact : sparse ? x0_sparse : x0_dense;

  // Activations: inputs of layers >= 1, their dropout copies and gradients, and what each layer
  // keeps between forward and backward (models/*_layer.cpp).
  // The halo rows layers share (training/halo_sharing.hpp): GCN, SAGE and GIN layers split;
  // those that aggregate first (GIN: when the input is no wider than its MLP) keep no halo rows
  // for their backward, nor does a layer that reads a dropout copy.
  std::vector<HaloUse> uses(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) {
    const LayerDims& d = dims[static_cast<std::size_t>(l)];
    const bool aggregate_first = gin ? d.in <= d.mlp : d.in <= d.out;
    uses[static_cast<std::size_t>(l)] = {d.in, !gat && !residual, !aggregate_first && !dropout_copy};
  }
  const HaloSharing sharing = plan_halo_sharing(uses);
  double layer_inputs = kF * halo * static_cast<double>(sharing.shared_width);  // the shared buffer
  for (int l = 1; l < L; ++l) {
    const double w = static_cast<double>(dims[static_cast<std::size_t>(l)].in);
    const std::size_t i = static_cast<std::size_t>(l);
    layer_inputs += kF * w * (sharing.input[i] == HaloSharing::kOwn ? nl : own);       // x_
    layer_inputs += kF * w * (sharing.gradient[i] == HaloSharing::kOwn ? nl : own);    // gx_
    if (dropout_copy) layer_inputs += kF * nl * w;                                     // xd_
  }
  double activations = layer_inputs, pipelined_buffers = 0;
  for (int l = 1; l < L; ++l) {
    const double w = static_cast<double>(dims[static_cast<std::size_t>(l)].in);
    // The policy's state (comm/pipelined_policy.cpp, refresh_policy.cpp): pipelined, the used
    // and the arriving halo rows and the arriving (and smoothed) owned gradients; refresh, the
    // cache of received slots with their ages, the sent slots' ages and importances (and their
    // last sent values when importance is change), and the sent slots' gradients backward. Plain rows bound semantic slots from above.
    if (pipelined)
      pipelined_buffers += kF * w * (2 * halo + own + (cfg.smoothing > 0 ? own : 0));
    if (refresh)
      pipelined_buffers += kF * w * recvs + (kL + 1) * recvs + (kL + kF) * sends +
                           (cfg.refresh_by == RefreshConfig::By::change ? kF * w * sends : 0) +
                           (cfg.refresh_exact_backward ? 0 : kF * w * sends);  // gradient slots
  }
  for (int l = 0; l < L; ++l) {
    const LayerDims& d = dims[static_cast<std::size_t>(l)];
    const double in_d = static_cast<double>(d.in), out_d = static_cast<double>(d.out);
    const bool used_sparse = l == 0 && (sparse || compact);
    if (residual) {
      // models/residual_block.cpp: LayerNorm(h) (later its gradient) and its statistics on every
      // local row; the aggregation, the feed-forward's two kept rows and two gradients on the
      // owned rows; the first block's z0, h and h's gradient on every local row; the head's
      // output rows, their norm, statistics and gradient.
      activations += kF * (nl * hid + 2 * nl + 5 * own * hid);
      if (l == 0) activations += kF * 3 * nl * hid;
      // GAT blocks: z and the scores on every local row (target scores on the owned rows), and
      // their gradients.
      if (gat) activations += 2 * kF * (nl * hid + (nl + own) * static_cast<double>(d.heads));
      if (l + 1 == L) activations += kF * (3 * own * hid + 2 * own);
    } else if (gat) {
      const double width = static_cast<double>(d.heads) * out_d, h = static_cast<double>(d.heads);
      activations += kF * (nl * width + own * h + nl * h);  // z, s_dst, s_src
      activations += kF * (nl * width + own * h + nl * h);  // gz, gs_dst, gs_src
      if (!d.concat) activations += kF * own * width;       // per-head output (mean of heads)
      if (cfg.value_dropout > 0) activations += kF * nl * width;  // z after value dropout
    } else if (gin) {
      const double m = static_cast<double>(d.mlp);
      activations += 2 * kF * own * m;  // the MLP's hidden rows and their gradient
      if (in_d <= m && !used_sparse) {
        activations += 2 * kF * own * in_d;  // aggregated input h and its gradient
      } else {
        activations += 2 * kF * nl * m;  // transformed rows x W1 and their gradient
      }
    } else if (in_d <= out_d && !used_sparse) {
      activations += kF * own * in_d * (l > 0 ? 2 : 1);  // aggregated input (+ its gradient)
    } else {
      activations += kF * nl * out_d;  // transformed rows
    }
  }
  // Output layer: logits and their gradient, labels (or the label matrix), the train and the
  // validation masks.
  const double output = 2 * kF * own * classes + (s.multilabel ? own * classes : kI * own) + 2 * own;

  // Exchange buffers (comm/halo_exchange.cpp): encoded send and receive blocks, the gathered
  // send rows forward, the decoded rows backward (neither for fp32, whose blocks are the rows,
  // nor on the CPU, where the codecs encode and add plain rows through the slot rows).
  // Pipelined and refresh keep one set per (layer, direction) that exchanges; synchronous runs
  // share one set, its blocks as large as the largest exchange's two sides together and each
  // row buffer as the largest (HaloExchange::share_workspaces), layer 0 included when its
  // features cross through the halo exchange. There the rows are lent: fp32 with no host
  // staging receives the forward's plain halo rows in place and sends the backward's halo
  // gradients from where they are (and the forward's owned rows when they are sent in order).
  const CodecPlan codecs = parse_codec_plan(cfg.codec, cfg.codec_forward, cfg.codec_backward, L);
  const std::shared_ptr<const Codec> layer0 =
      cfg.compress_layer0 ? codecs.forward[0] : make_codec("fp32");
  const bool shared = cfg.exchange == ExchangeMode::sync;
  const bool stage = !where.device_is_host && !where.transport_takes_device_memory;
  const bool lends = shared && !stage && cfg.halo_rows == HaloRows::plain;
  const bool owned_in_order =
      s.send_contiguous &&
      std::accumulate(s.send_counts.begin(), s.send_counts.end(), std::int64_t{0}) == s.num_owned;
  double exchange = 0, staging = 0, largest_forward = 0;
  double max_bytes = 0, max_send_rows = 0, max_recv_rows = 0;  // shared set
  auto one = [&](double send_bytes, double recv_bytes, double send_rows, double recv_rows) {
    exchange += send_bytes + recv_bytes + send_rows + recv_rows;
    staging += send_bytes + recv_bytes;
    max_bytes = std::max(max_bytes, send_bytes + recv_bytes);
    max_send_rows = std::max(max_send_rows, send_rows);
    max_recv_rows = std::max(max_recv_rows, recv_rows);
  };
  // Codec::gathers: a CPU codec encodes plain halo rows straight from the layer's rows;
  // Codec::scatters: it adds the received ones straight into theirs.
  auto reads_slot_rows = [&](const Codec& c) {
    return where.device_is_host && cfg.halo_rows == HaloRows::plain && c.gathers(*cpu_device());
  };
  auto writes_slot_rows = [&](const Codec& c) {
    return where.device_is_host && cfg.halo_rows == HaloRows::plain && c.scatters(*cpu_device());
  };
  double compact_positions = 0;
  for (int l = 0; l < L; ++l) {
    const std::int64_t w = dims[static_cast<std::size_t>(l)].in;
    const double wd = static_cast<double>(w);
    const Codec& fc = l == 0 ? *layer0 : *codecs.forward[static_cast<std::size_t>(l)];
    if (l == 0 && compact) {
      // The positions cross once, through host buffers (the received ones land in place).
      compact_positions = slots * sends;
      continue;
    }
    if (l == 0 && feature_rows) continue;  // host messages, gone after the exchange
    // The gathered send rows, unless a raw-rows codec (fp32) gathers into the message bytes or
    // the codec reads plain rows through the slot rows itself (Codec::gathers, on the CPU);
    // refresh gathers every slot of layers >= 1 before choosing (a matrix of the same size).
    const bool gathers = reads_slot_rows(fc);
    const double f_rows = (!s.send_contiguous && w > 0 &&
                           ((refresh && l > 0) || (!fc.raw_rows() && !gathers)))
                              ? kF * sends * wd
                              : 0;
    const bool lent = lends && fc.raw_rows();
    one(lent && owned_in_order ? 0 : encoded(fc, s.send_counts, w),
        lent ? 0 : encoded(fc, s.recv_counts, w), f_rows, 0);
    if (l > 0)
      largest_forward = std::max(largest_forward, encoded(fc, s.send_counts, w) +
                                                      encoded(fc, s.recv_counts, w) + f_rows);
    // Refresh sends gradients as variable-size messages (transient), unless every gradient
    // crosses back (--refresh-exact-backward, the fixed exchange).
    if (l == 0 || (refresh && !cfg.refresh_exact_backward)) continue;
    const Codec& bc = *codecs.backward[static_cast<std::size_t>(l)];
    one(lends && bc.raw_rows() ? 0 : encoded(bc, s.recv_counts, w),
        encoded(bc, s.send_counts, w), 0,
        (w > 0 && !bc.raw_rows() && !writes_slot_rows(bc)) ? kF * sends * wd : 0);
  }
  if (shared) {
    exchange = max_bytes + max_send_rows + max_recv_rows;
    staging = max_bytes;
  }
  exchange += compact_positions;
  // The feature rows' messages, sent and received (host): a count per row, then the row's
  // non-zeros as pairs when sparse or its values (halo rows assumed as dense as the owned ones);
  // a dense receiver on a GPU stages one peer's decoded rows (at most all halo rows).
  const double row_nnz = density * feat;
  const double row_bytes = kI + (2 * row_nnz < feat ? (kI + kF) * row_nnz : kF * feat);
  const double rows_messages = row_bytes * (sends + recvs) +
                               (!where.device_is_host && !sparse ? kF * feat * recvs : 0);
  // Sparse input built directly: the host CSR of all local rows exists beside the messages.
  const double host_csr = kI * (nl + 1) + (kI + kF) * density * nl * feat;
  const double layer0_exchange = [&] {
    if (feature_rows) return 0.0;  // all of it host memory (rows_messages)
    if (compact) return slots * sends;
    if (shared) return exchange;  // the first exchange allocates the whole shared set
    const std::int64_t w = dims[0].in;
    return encoded(*layer0, s.send_counts, w) + encoded(*layer0, s.recv_counts, w) +
           ((!s.send_contiguous && w > 0 && !layer0->raw_rows() && !reads_slot_rows(*layer0))
                ? kF * sends * static_cast<double>(w)
                                                                  : 0);
  }();
  if (!stage) staging = 0;

  const std::string f = std::to_string(s.num_features);
  const std::string width_opts = gat ? "--hidden, --heads, --layers" : "--hidden, --layers";
  MemoryEstimate e;
  auto add = [&](std::string name, std::string driver, MemorySpace space, double bytes) {
    e.terms.push_back({std::move(name), std::move(driver), space, to_bytes(bytes)});
  };
  const MemorySpace dev = MemorySpace::device, host = MemorySpace::host;
  add("partition (host)", "the partition's nodes and edges", host, partition_host);
  add("graph and halo plan", "the partition's nodes and edges", dev, graph);
  add("graph operator", "the partition's edges", dev, operators);
  if (gat)
    add("attention coefficients",
        std::string(cfg.attention_dropout > 0 ? "--attention-dropout, " : "") +
            "--heads, --output-heads, --layers, the partition's edges",
        dev, attention);
  if (attention_scratch > 0)
    add("attention backward scratch (CPU)", "--heads, --output-heads, the partition's edges", host,
        attention_scratch);
  add("layer-0 input",
      compact ? "the sparsified features (F = " + f + ", " + std::to_string(s.sparse_slots) +
                    " positions per row)"
              : "the features (F = " + f + ")",
      dev, x0_steady + xd0);
  add("activations", width_opts, dev, activations);
  if (pipelined || refresh)
    add(pipelined ? "pipelined halo buffers" : "refresh caches",
        std::string("--exchange ") + to_string(cfg.exchange) + ", " + width_opts, dev, pipelined_buffers);
  add("output (logits, labels)", "num_classes = " + std::to_string(s.num_classes) +
      " in the partition", dev, output);
  add("exchange buffers", "--codec, the halo and boundary rows, " + width_opts, dev, exchange);
  if (stage) add("host staging of exchanges", "--transport mpi on a GPU", host, staging);
  add("parameters and optimiser", width_opts + ", --optimizer", dev, params);

  // The feature matrix as read and its copy on the device; sparsified, the positions as read and
  // the host copy of all local rows' positions the exchange fills.
  // Built directly as CSR: the features as read and the owned rows' CSR beside them.
  e.startup_host = to_bytes(compact      ? own * slots + nl * slots
                            : csr_direct ? kF * own * feat + kI * (own + 1) + (kI + kF) * density * own * feat
                                         : kF * own * feat);
  e.startup_device = to_bytes(compact || csr_direct ? 0 : kF * own * feat);
  // A checkpoint (--checkpoint-dir) holds a host copy of the rank's state while it is written:
  // the parameters and the optimiser's moments, the best model's snapshot, and the policy's
  // state (pipelined rows and gradients, refresh caches and ages).
  const double checkpoint = cfg.checkpoint_dir.empty()
                                ? 0
                                : params + pipelined_buffers + (cfg.restore_best ? snapshot : 0);
  // ROC AUC ranks every node of the graph on every rank: scores and codes (16 bytes a node), the
  // scored nodes of a split with their labels and sort order (up to 17 bytes a node).
  const double roc_auc = cfg.metric == MetricKind::roc_auc
                             ? 33.0 * static_cast<double>(s.global_nodes)
                             : 0;
  e.epoch_host = to_bytes(kF * own * classes + (stage ? largest_param : 0) + checkpoint + roc_auc);
  e.epoch_device = to_bytes((pipelined ? largest_forward : 0) + (cfg.restore_best ? snapshot : 0));

  // Phases: building the Trainer (features staged, no layer caches or exchange buffers yet), the
  // one-time feature exchange (dense input and, when sparse, its CSR side by side; built directly
  // from feature rows, the CSR alone on the device), and training.
  const double steady_dev = static_cast<double>(e.steady(dev));
  const double steady_host = static_cast<double>(e.steady(host));
  const double lazy = activations - layer_inputs;  // the Trainer's own buffers exist from construction
  const double ctor_x0 = compact ? kF * slots : csr_direct ? 0 : x0_dense;
  const double ctor_dev = steady_dev - exchange - lazy - x0_steady + ctor_x0 +
                          static_cast<double>(e.startup_device);
  const double ctor_host = partition_host + adjacency + static_cast<double>(e.startup_host);
  const double exchange_dev = ctor_dev - static_cast<double>(e.startup_device) + layer0_exchange +
                              (sparse ? x0_sparse : compact ? x0_compact : 0);
  const double exchange_host =
      partition_host + (feature_rows ? rows_messages + (csr_direct ? host_csr : 0) : 0);
  const double train_dev = steady_dev + static_cast<double>(e.epoch_device);
  const double train_host = steady_host + static_cast<double>(e.epoch_host);
  e.peak_device = to_bytes(std::max({ctor_dev, exchange_dev, train_dev}));
  e.peak_host = to_bytes(std::max({ctor_host, exchange_host, train_host}));
  e.peak_total = where.device_is_host
                     ? to_bytes(std::max({ctor_dev + ctor_host, exchange_dev + exchange_host,
                                          train_dev + train_host}))
                     : e.peak_host;
  return e;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", bytes, units[u]);
  return buf;
}

std::uint64_t node_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t phys = pages > 0 && page > 0
                           ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                           : std::numeric_limits<std::uint64_t>::max();
  // A batch system may confine the job to less than the machine (cgroup v2, then v1).
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    try {
      const unsigned long long limit = std::stoull(text);
      if (limit > 0) phys = std::min<std::uint64_t>(phys, limit);
    } catch (const std::exception&) {
    }
  }
  return phys;
}

}  // namespace halognn
