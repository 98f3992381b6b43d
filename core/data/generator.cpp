#include "core/data/generator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <omp.h>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace halognn {
namespace {

// Stream coordinates (RngKey::a) of the generator's independent random streams.
enum Stream : std::uint64_t {
  stream_class = 1,
  stream_propensity = 2,
  stream_edge = 3,
  stream_class_mean = 4,
  stream_noise = 5,
  stream_split = 6,
  stream_overlap = 7,
};

/// Walker/Vose alias table: O(1) draws from a discrete distribution.
struct AliasTable {
  std::vector<float> prob;
  std::vector<std::uint32_t> alias;

  explicit AliasTable(const std::vector<double>& w) : prob(w.size(), 1.0f), alias(w.size()) {
    const std::size_t n = w.size();
    std::iota(alias.begin(), alias.end(), 0u);
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    if (n == 0 || total <= 0) return;
    std::vector<double> scaled(n);
    std::vector<std::uint32_t> small, large;
    for (std::size_t i = 0; i < n; ++i) {
      scaled[i] = w[i] * static_cast<double>(n) / total;
      (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      const std::uint32_t s = small.back(), l = large.back();
      small.pop_back();
      prob[s] = static_cast<float>(scaled[s]);
      alias[s] = l;
      scaled[l] -= 1.0 - scaled[s];
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    // Whatever is left has probability one up to rounding.
    for (std::uint32_t i : small) prob[i] = 1.0f;
    for (std::uint32_t i : large) prob[i] = 1.0f;
  }

  /// Draws an index from two random words.
  std::uint32_t draw(std::uint32_t w_bucket, std::uint32_t w_coin) const {
    const auto i = static_cast<std::uint32_t>(
        (static_cast<std::uint64_t>(w_bucket) * prob.size()) >> 32);
    const float coin = static_cast<float>(w_coin >> 8) * (1.0f / 16777216.0f);
    return coin < prob[i] ? i : alias[i];
  }
};

/// Two independent standard normals from two random words (Box-Muller).
inline std::pair<float, float> box_muller(std::uint32_t w1, std::uint32_t w2) {
  const double u1 = (static_cast<double>(w1) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  const double u2 = static_cast<double>(w2) * (1.0 / 4294967296.0);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 6.283185307179586 * u2;
  return {static_cast<float>(r * std::cos(t)), static_cast<float>(r * std::sin(t))};
}

/// Fills `row` (length f) with standard normals from the stream (rng, item).
inline void normals(const CounterRng& rng, std::uint64_t item, float* row, std::int64_t f) {
  std::uint32_t w[4];
  for (std::int64_t k = 0; k < f; k += 4) {
    rng.block(item, static_cast<std::uint64_t>(k / 4), w);
    const auto [a, b] = box_muller(w[0], w[1]);
    const auto [c, d] = box_muller(w[2], w[3]);
    const float z[4] = {a, b, c, d};
    for (std::int64_t i = 0; i < 4 && k + i < f; ++i) row[k + i] = z[i];
  }
}

void check_config(const SbmConfig& c) {
  GNN_CHECK_CONFIG(c.num_nodes >= 2, "generator: --nodes must be at least 2 (got ", c.num_nodes, ")");
  GNN_CHECK_CONFIG(c.num_nodes < (GlobalId{1} << 32), "generator: --nodes must be below 2^32");
  GNN_CHECK_CONFIG(c.num_edges >= 1, "generator: --edges must be positive (got ", c.num_edges, ")");
  GNN_CHECK_CONFIG(c.num_classes >= 1 && c.num_classes <= c.num_nodes,
                   "generator: --classes must be in [1, nodes] (got ", c.num_classes, ")");
  GNN_CHECK_CONFIG(c.num_features >= 1, "generator: --features must be positive (got ",
                   c.num_features, ")");
  GNN_CHECK_CONFIG(c.homophily >= 0 && c.homophily <= 1,
                   "generator: --homophily must be in [0, 1] (got ", c.homophily, ")");
  GNN_CHECK_CONFIG(c.power_law_exponent > 1, "generator: --power-law must exceed 1 (got ",
                   c.power_law_exponent, ")");
  GNN_CHECK_CONFIG(c.max_degree_fraction > 0 && c.max_degree_fraction <= 1,
                   "generator: --max-degree-fraction must be in (0, 1]");
  GNN_CHECK_CONFIG(c.feature_noise >= 0, "generator: --noise must be non-negative");
  GNN_CHECK_CONFIG(c.class_overlap >= 0 && c.class_overlap <= 1,
                   "generator: --class-overlap must be in [0, 1] (got ", c.class_overlap, ")");
  GNN_CHECK_CONFIG(c.train_fraction >= 0 && c.val_fraction >= 0 &&
                       c.train_fraction + c.val_fraction <= 1,
                   "generator: split fractions must be non-negative and sum to at most 1");
}

}  // namespace

namespace {

/// The shape of a graph users train on, as the generator's knobs.
struct Preset {
  const char* name;
  GlobalId nodes;
  std::int64_t undirected_edges;
  std::int32_t features, classes;
  double largest_degree, train_fraction, val_fraction;
};

// ogbn-products (Hu et al., OGB): 2,449,029 nodes, 61,859,140 undirected edges, 100 features,
// 47 classes, 8% / 1.6% / 90.4% split, largest degree 17,481. Reddit (Hamilton et al.): 232,965
// nodes, 114,848,857 stored (directed) edges, i.e. about 57.4 M undirected, 602 features, 41
// classes, 66% / 10% / 24% split, largest degree 21,657. Homophily 0.8 for both: this project's
// choice (docs/datasets.md "Presets").
constexpr Preset kPresets[] = {
    {"products", 2449029, 61859140, 100, 47, 17481, 0.0803, 0.0161},
    {"reddit", 232965, 57424428, 602, 41, 21657, 0.659, 0.102},
};

}  // namespace

std::vector<std::string> sbm_preset_names() {
  std::vector<std::string> names{"default"};
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

SbmConfig sbm_preset(std::string_view name) {
  SbmConfig c;
  if (name == "default") return c;
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    c.num_nodes = p.nodes;
    c.num_edges = p.undirected_edges;
    c.num_features = p.features;
    c.num_classes = p.classes;
    c.homophily = 0.8;
    c.max_degree_fraction = p.largest_degree / static_cast<double>(p.nodes);
    c.train_fraction = p.train_fraction;
    c.val_fraction = p.val_fraction;
    return c;
  }
  std::string known;
  for (const std::string& n : sbm_preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError(detail::concat("generator: --preset must be one of ", known, " (got '",
                                   std::string(name), "')"));
}

Dataset generate_sbm(const SbmConfig& cfg) {
  check_config(cfg);
  const GlobalId n = cfg.num_nodes;
  const std::int32_t num_classes = cfg.num_classes;
  auto key = [&](std::uint64_t stream) {
    return CounterRng(RngKey{cfg.seed, RngPurpose::generator, stream, 0});
  };

  Dataset ds;
  ds.name = "sbm";
  ds.num_nodes = n;
  ds.num_classes = num_classes;
  ds.labels.resize(static_cast<std::size_t>(n));

  // 1. Classes (uniform) and power-law propensities theta = (1-u)^(-1/(gamma-1)), theta >= 1.
  std::vector<double> theta(static_cast<std::size_t>(n));
  {
    const CounterRng rc = key(stream_class), rp = key(stream_propensity);
    const double inv = -1.0 / (cfg.power_law_exponent - 1.0);
#pragma omp parallel for schedule(static)
    for (GlobalId v = 0; v < n; ++v) {
      ds.labels[v] = static_cast<std::int32_t>(
          (static_cast<std::uint64_t>(rc.word(v, 0)) * num_classes) >> 32);
      theta[v] = std::pow(1.0 - rp.uniform_double(v, 0), inv);
    }
  }
  // Clip hubs so no expected degree (2M theta / sum theta) exceeds max_degree_fraction * n. The
  // clip changes the sum, so iterate a few times. Sums are sequential: a parallel reduction's
  // rounding would depend on the thread count.
  const double two_m = 2.0 * static_cast<double>(cfg.num_edges);
  double cap = std::numeric_limits<double>::infinity();
  for (int it = 0; it < 4; ++it) {
    double sum = 0;
    for (double t : theta) sum += std::min(t, cap);
    cap = cfg.max_degree_fraction * static_cast<double>(n) * sum / two_m;
  }
#pragma omp parallel for schedule(static)
  for (GlobalId v = 0; v < n; ++v) theta[v] = std::min(theta[v], cap);

  // 2. Per-class alias tables over the members, and one over the classes by propensity mass.
  std::vector<std::vector<std::uint32_t>> members(num_classes);
  for (GlobalId v = 0; v < n; ++v) members[ds.labels[v]].push_back(static_cast<std::uint32_t>(v));
  std::vector<AliasTable> in_class;
  std::vector<double> class_mass(num_classes, 0.0);
  in_class.reserve(num_classes);
  for (std::int32_t c = 0; c < num_classes; ++c) {
    std::vector<double> w(members[c].size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = theta[members[c][i]];
      class_mass[c] += w[i];
    }
    in_class.emplace_back(w);
  }
  const AliasTable class_table(class_mass);
  const std::int32_t nonempty_classes = static_cast<std::int32_t>(
      std::count_if(members.begin(), members.end(), [](const auto& m) { return !m.empty(); }));

  // 3. Edges: endpoint u proportional to theta; v from u's class with probability h, otherwise
  // from another class (by rejection on the class draw), proportional to theta within it.
  // Edge e reads only its own counter stream, so the result is independent of thread count.
  const std::int64_t m = cfg.num_edges;
  ds.edge_src.resize(static_cast<std::size_t>(m));
  ds.edge_dst.resize(static_cast<std::size_t>(m));
  const CounterRng re = key(stream_edge);
  const auto h_threshold = static_cast<std::uint32_t>(
      std::min(cfg.homophily * 4294967296.0, 4294967295.0));
  std::int64_t intra = 0, loops = 0;
#pragma omp parallel for schedule(static) reduction(+ : intra, loops)
  for (std::int64_t e = 0; e < m; ++e) {
    std::uint32_t a[4], b[4];
    re.block(e, 0, a);
    re.block(e, 1, b);
    const std::uint32_t cu = class_table.draw(a[0], a[1]);
    const std::uint32_t u = members[cu][in_class[cu].draw(a[2], a[3])];
    std::uint32_t cv = cu;
    const bool same = b[0] < h_threshold || cfg.homophily >= 1.0 || nonempty_classes == 1;
    if (!same) {
      // Rejection: expected tries 1 / (1 - share of cu); bounded, then a deterministic fallback.
      std::uint32_t w[4];
      bool found = false;
      for (std::uint64_t t = 0; t < 64 && !found; ++t) {
        re.block(e, 2 + t, w);
        for (int k = 0; k < 4 && !found; k += 2) {
          cv = class_table.draw(w[k], w[k + 1]);
          found = cv != cu;
        }
      }
      for (std::uint32_t step = 1; !found; ++step) {
        cv = (cu + step) % static_cast<std::uint32_t>(num_classes);
        found = !members[cv].empty();
      }
    }
    const std::uint32_t v = members[cv][in_class[cv].draw(b[1], b[2])];
    ds.edge_src[e] = u;
    ds.edge_dst[e] = v;
    if (u == v) ++loops;
    else if (cu == cv) ++intra;
  }

  // 4. Features: a standard-normal mean per class plus Gaussian noise per node. With probability
  // class_overlap the mean is another class's (uniform over the other C-1).
  const std::int64_t f = cfg.num_features;
  std::vector<float> means(static_cast<std::size_t>(num_classes * f));
  {
    const CounterRng rm = key(stream_class_mean);
    for (std::int32_t c = 0; c < num_classes; ++c) normals(rm, c, means.data() + c * f, f);
  }
  ds.features = Matrix(n, f);
  std::int64_t borrowed = 0;
  {
    const CounterRng rn = key(stream_noise), ro = key(stream_overlap);
    float* x = ds.features.data();
    const auto sigma = static_cast<float>(cfg.feature_noise);
    const auto overlap_threshold = static_cast<std::uint64_t>(
        std::min(cfg.class_overlap * 4294967296.0, 4294967296.0));
#pragma omp parallel for schedule(static) reduction(+ : borrowed)
    for (GlobalId v = 0; v < n; ++v) {
      float* row = x + v * f;
      normals(rn, v, row, f);
      std::int32_t c = ds.labels[v];
      if (num_classes > 1 && ro.word(v, 0) < overlap_threshold) {
        const auto shift = (static_cast<std::uint64_t>(ro.word(v, 1)) * (num_classes - 1)) >> 32;
        c = static_cast<std::int32_t>((c + 1 + static_cast<std::int64_t>(shift)) % num_classes);
        ++borrowed;
      }
      const float* mu = means.data() + c * f;
      for (std::int64_t k = 0; k < f; ++k) row[k] = mu[k] + sigma * row[k];
    }
  }

  // 5. Split: nodes in a random order (key, id); the first fractions are train, then val.
  {
    const CounterRng rs = key(stream_split);
    std::vector<std::pair<std::uint32_t, GlobalId>> order(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
    for (GlobalId v = 0; v < n; ++v) order[v] = {rs.word(v, 0), v};
    std::sort(order.begin(), order.end());
    const auto n_train = static_cast<GlobalId>(std::llround(cfg.train_fraction * n));
    const auto n_val = std::min(n - n_train, static_cast<GlobalId>(std::llround(cfg.val_fraction * n)));
    for (GlobalId i = 0; i < n; ++i) {
      auto& dst = i < n_train ? ds.train_idx : (i < n_train + n_val ? ds.val_idx : ds.test_idx);
      dst.push_back(order[i].second);
    }
    std::sort(ds.train_idx.begin(), ds.train_idx.end());
    std::sort(ds.val_idx.begin(), ds.val_idx.end());
    std::sort(ds.test_idx.begin(), ds.test_idx.end());
  }

  Json config = Json::object();
  config["num_nodes"] = cfg.num_nodes;
  config["num_edges"] = cfg.num_edges;
  config["num_classes"] = cfg.num_classes;
  config["num_features"] = cfg.num_features;
  config["homophily"] = cfg.homophily;
  config["power_law_exponent"] = cfg.power_law_exponent;
  config["max_degree_fraction"] = cfg.max_degree_fraction;
  config["feature_noise"] = cfg.feature_noise;
  config["class_overlap"] = cfg.class_overlap;
  config["train_fraction"] = cfg.train_fraction;
  config["val_fraction"] = cfg.val_fraction;
  config["seed"] = static_cast<std::int64_t>(cfg.seed);
  ds.meta["source_format"] = "generator";
  ds.meta["generator"] = "degree-corrected SBM (halognn generate_sbm)";
  ds.meta["config"] = std::move(config);
  // Measured over the generated (stored) edges without self-loops.
  const std::int64_t non_loop = m - loops;
  ds.meta["measured_homophily"] =
      non_loop > 0 ? static_cast<double>(intra) / static_cast<double>(non_loop) : 0.0;
  ds.meta["self_loops_generated"] = loops;
  // Nodes whose features were drawn around another class's mean (class_overlap).
  ds.meta["borrowed_feature_means"] = borrowed;
  ds.meta["propensity_cap"] = cap;
  Json split = Json::object();
  split["kind"] = "random-fraction";
  split["seed"] = static_cast<std::int64_t>(cfg.seed);
  ds.meta["split"] = std::move(split);
  return ds;
}

}  // namespace halognn
