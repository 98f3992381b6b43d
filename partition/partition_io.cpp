// The partition directory: manifest.json and one binary rank file per part.
//
// Rank file layout (little-endian, no padding; docs/partitioning.md has the table):
//   "HGNNPART" | u32 version | u32 section count | fixed header fields
//   sections, each: char[4] tag | u32 element bytes | u64 element count | data
//   u32 CRC32 (zlib) of every preceding byte
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include <unistd.h>
#include <zlib.h>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "partition/partition_io.hpp"

namespace halognn {

static_assert(std::endian::native == std::endian::little,
              "the partition file format is little-endian; add byte swapping for this host");

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'G', 'N', 'N', 'P', 'A', 'R', 'T'};
constexpr std::uint32_t kNumSections = 12;
constexpr std::uint32_t kFlagMultilabel = 1;

std::uint32_t crc_update(std::uint32_t crc, const void* data, std::size_t n) {
  // zlib takes uInt lengths; feed large buffers in 1 GiB pieces.
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const std::size_t piece = std::min<std::size_t>(n, std::size_t{1} << 30);
    crc = static_cast<std::uint32_t>(::crc32(crc, p, static_cast<uInt>(piece)));
    p += piece;
    n -= piece;
  }
  return crc;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

/// Appends bytes to a file while keeping the running CRC32 and size.
class FileWriter {
 public:
  explicit FileWriter(std::string path) : file_(std::move(path)) {}
  void write(const void* data, std::size_t n) {
    if (n == 0) return;
    file_.write(data, n);
    crc_ = crc_update(crc_, data, n);
    bytes_ += n;
  }
  template <typename T>
  void pod(T v) {
    write(&v, sizeof v);
  }
  template <typename T>
  void section(const char (&tag)[5], const T* data, std::size_t count) {
    write(tag, 4);
    pod<std::uint32_t>(sizeof(T));
    pod<std::uint64_t>(count);
    write(data, count * sizeof(T));
  }
  /// Writes the CRC trailer and commits the file (fsync, rename into place); returns (size, crc
  /// of the body).
  PartitionFileInfo finish() {
    const std::uint32_t body_crc = crc_;
    file_.write(&body_crc, sizeof body_crc);
    bytes_ += sizeof body_crc;
    file_.commit();
    PartitionFileInfo info;
    info.bytes = bytes_;
    info.crc32 = body_crc;
    return info;
  }
  /// Commits without a trailer (plain text files).
  void finish_text() { file_.commit(); }

 private:
  AtomicFile file_;
  std::uint32_t crc_ = static_cast<std::uint32_t>(::crc32(0, nullptr, 0));
  std::uint64_t bytes_ = 0;
};

/// Reads a rank file front to back, checking that nothing runs past its end.
class FileReader {
 public:
  FileReader(std::string path, std::uint64_t size) : path_(std::move(path)), left_(size) {
    f_.reset(std::fopen(path_.c_str(), "rb"));
    if (!f_) throw InputError(path_, "cannot open file");
  }
  void read(void* data, std::size_t n, const char* what) {
    GNN_CHECK_INPUT(n <= left_, path_, "truncated: ", what, " needs ", n, " bytes but only ",
                    left_, " remain");
    if (n > 0 && std::fread(data, 1, n, f_.get()) != n) throw InputError(path_, "read failed");
    left_ -= n;
  }
  template <typename T>
  T pod(const char* what) {
    T v;
    read(&v, sizeof v, what);
    return v;
  }
  /// Reads a section whose tag and element size are fixed; `expected` < 0 means any count.
  template <typename T>
  void section(const char (&tag)[5], std::vector<T>& out, std::int64_t expected) {
    out.resize(section_count<T>(tag, expected));
    read(out.data(), out.size() * sizeof(T), tag);
  }
  template <typename T>
  std::size_t section_count(const char (&tag)[5], std::int64_t expected) {
    char got[4];
    read(got, 4, "section tag");
    GNN_CHECK_INPUT(std::memcmp(got, tag, 4) == 0, path_, "expected section ", tag, ", found '",
                    std::string(got, 4), "'");
    const auto elem = pod<std::uint32_t>("section header");
    const auto count = pod<std::uint64_t>("section header");
    GNN_CHECK_INPUT(elem == sizeof(T), path_, "section ", tag, " has ", elem,
                    "-byte elements, expected ", sizeof(T));
    GNN_CHECK_INPUT(expected < 0 || count == static_cast<std::uint64_t>(expected), path_,
                    "section ", tag, " has ", count, " elements, expected ", expected);
    // Checked before allocating, so a corrupt count cannot ask for absurd memory.
    GNN_CHECK_INPUT(count <= left_ / sizeof(T), path_, "truncated: section ", tag, " declares ",
                    count, " elements but only ", left_, " bytes remain");
    return static_cast<std::size_t>(count);
  }
  std::uint64_t left() const { return left_; }

 private:
  std::string path_;
  FilePtr f_;
  std::uint64_t left_;
};

void write_plan(FileWriter& w, const char (&peers_tag)[5], const char (&rows_tag)[5],
                const std::vector<PeerRows>& plan) {
  std::vector<std::int32_t> peers;
  std::vector<LocalId> rows;
  for (const PeerRows& pr : plan) {
    peers.push_back(pr.peer);
    peers.push_back(static_cast<std::int32_t>(pr.rows.size()));
    rows.insert(rows.end(), pr.rows.begin(), pr.rows.end());
  }
  w.section(peers_tag, peers.data(), peers.size());
  w.section(rows_tag, rows.data(), rows.size());
}

std::vector<PeerRows> read_plan(FileReader& r, const char (&peers_tag)[5],
                                const char (&rows_tag)[5], const std::string& path) {
  std::vector<std::int32_t> peers;
  std::vector<LocalId> rows;
  r.section(peers_tag, peers, -1);
  GNN_CHECK_INPUT(peers.size() % 2 == 0, path, "section ", peers_tag, " has an odd length");
  std::int64_t total = 0;
  for (std::size_t i = 1; i < peers.size(); i += 2) {
    GNN_CHECK_INPUT(peers[i] >= 0, path, "section ", peers_tag, " has a negative row count");
    total += peers[i];
  }
  r.section(rows_tag, rows, total);
  std::vector<PeerRows> plan(peers.size() / 2);
  std::int64_t at = 0;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    plan[k].peer = peers[2 * k];
    plan[k].rows.assign(rows.begin() + at, rows.begin() + at + peers[2 * k + 1]);
    at += peers[2 * k + 1];
  }
  return plan;
}

/// CRC32 of the first `n` bytes of a file.
std::uint32_t crc_of_prefix(const std::string& path, std::uint64_t n) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw InputError(path, "cannot open file");
  std::vector<unsigned char> buf(std::size_t{1} << 22);
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0, nullptr, 0));
  while (n > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
    if (std::fread(buf.data(), 1, want, f.get()) != want) throw InputError(path, "read failed");
    crc = crc_update(crc, buf.data(), want);
    n -= want;
  }
  return crc;
}

std::uint64_t file_size_or_throw(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(path, "cannot read file: " + ec.message());
  return size;
}

LocalPartition read_rank_file(const std::string& path, std::uint32_t* crc_out) {
  const std::uint64_t size = file_size_or_throw(path);
  const std::uint64_t min_size = sizeof kMagic + 8 + 4;
  GNN_CHECK_INPUT(size >= min_size, path, "truncated: ", size,
                  " bytes is too short for a halognn partition file");
  // Check the CRC before parsing, so corruption is reported as such rather than as whatever
  // odd value it produced.
  const std::uint32_t body_crc = crc_of_prefix(path, size - 4);
  FileReader r(path, size);
  char magic[8];
  r.read(magic, sizeof magic, "magic");
  GNN_CHECK_INPUT(std::memcmp(magic, kMagic, sizeof kMagic) == 0, path,
                  "not a halognn partition file (bad magic)");
  const auto version = r.pod<std::uint32_t>("version");
  GNN_CHECK_INPUT(version == kPartitionFormatVersion, path, "partition file format version ",
                  version, ", this build reads version ", kPartitionFormatVersion,
                  "; re-run halognn-partition");
  {
    std::uint32_t stored = 0;
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f || std::fseek(f.get(), static_cast<long>(size - 4), SEEK_SET) != 0 ||
        std::fread(&stored, 1, 4, f.get()) != 4)
      throw InputError(path, "read failed");
    GNN_CHECK_INPUT(stored == body_crc, path, "checksum mismatch (stored CRC32 ", stored,
                    ", computed ", body_crc, "): the file is corrupt");
  }
  if (crc_out) *crc_out = body_crc;
  const auto sections = r.pod<std::uint32_t>("section count");
  GNN_CHECK_INPUT(sections == kNumSections, path, "has ", sections, " sections, expected ",
                  kNumSections);

  LocalPartition lp;
  lp.rank = r.pod<std::int32_t>("header");
  lp.num_parts = r.pod<std::int32_t>("header");
  lp.global_num_nodes = r.pod<std::int64_t>("header");
  lp.global_num_directed_edges = r.pod<std::int64_t>("header");
  lp.num_owned = r.pod<std::int32_t>("header");
  lp.num_halo = r.pod<std::int32_t>("header");
  const auto num_features = r.pod<std::int64_t>("header");
  lp.num_classes = r.pod<std::int32_t>("header");
  const auto flags = r.pod<std::uint32_t>("header");
  lp.multilabel = (flags & kFlagMultilabel) != 0;
  lp.global_train = r.pod<std::int64_t>("header");
  lp.global_val = r.pod<std::int64_t>("header");
  lp.global_test = r.pod<std::int64_t>("header");
  GNN_CHECK_INPUT(lp.num_owned >= 0 && lp.num_halo >= 0 && num_features >= 0 &&
                      lp.num_classes >= 0,
                  path, "negative count in header");
  const std::int64_t n_local = static_cast<std::int64_t>(lp.num_owned) + lp.num_halo;
  const std::int64_t owned = lp.num_owned;

  r.section("GIDS", lp.global_ids, n_local);
  r.section("DEGR", lp.global_degree, n_local);
  r.section("RPTR", lp.row_ptr, owned + 1);
  const std::int64_t nnz = lp.row_ptr.empty() ? 0 : lp.row_ptr.back();
  GNN_CHECK_INPUT(nnz >= 0, path, "negative adjacency size");
  r.section("COLS", lp.col, nnz);
  lp.send = read_plan(r, "SPEE", "SROW", path);
  lp.recv = read_plan(r, "RPEE", "RROW", path);
  const std::size_t nfeat = r.section_count<float>("FEAT", owned * num_features);
  lp.features = Matrix(owned, num_features);
  r.read(lp.features.data(), nfeat * sizeof(float), "FEAT");
  r.section("LABL", lp.labels, lp.multilabel ? 0 : owned);
  r.section("LMAT", lp.label_matrix, lp.multilabel ? owned * lp.num_classes : 0);
  std::vector<std::uint8_t> masks;
  r.section("MASK", masks, 3 * owned);
  lp.train_mask.assign(masks.begin(), masks.begin() + owned);
  lp.val_mask.assign(masks.begin() + owned, masks.begin() + 2 * owned);
  lp.test_mask.assign(masks.begin() + 2 * owned, masks.end());
  GNN_CHECK_INPUT(r.left() == 4, path, r.left() - 4, " unexpected bytes after the last section");
  validate_local_partition(lp, path);
  return lp;
}

/// FNV-1a over a byte range, continued from `h`.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

bool is_partition_dir(const fs::path& dir) {
  const fs::path m = dir / "manifest.json";
  if (!fs::is_regular_file(m)) return false;
  try {
    const Json j = read_json_file(m.string());
    return j.is_object() && j.contains("format") && j["format"] == kPartitionFormatName;
  } catch (const Error&) {
    return false;
  }
}

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string partition_file_name(Rank rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "part-%05d.bin", rank);
  return buf;
}

std::string dataset_fingerprint(const Dataset& ds) {
  // Hashes the graph, the feature shape and the labels: what decides the partition's content
  // apart from the feature values (hashing those would cost a pass over gigabytes).
  std::uint64_t h = 0xcbf29ce484222325ull;
  const std::int64_t shape[4] = {ds.num_nodes, ds.features.rows(), ds.features.cols(),
                                 ds.num_classes};
  h = fnv1a(h, shape, sizeof shape);
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0, nullptr, 0));
  crc = crc_update(crc, ds.edge_src.data(), ds.edge_src.size() * sizeof(GlobalId));
  crc = crc_update(crc, ds.edge_dst.data(), ds.edge_dst.size() * sizeof(GlobalId));
  crc = crc_update(crc, ds.labels.data(), ds.labels.size() * sizeof(std::int32_t));
  crc = crc_update(crc, ds.label_matrix.data(), ds.label_matrix.size());
  const std::uint64_t counts[2] = {ds.edge_src.size(), crc};
  h = fnv1a(h, counts, sizeof counts);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

PartitionFileInfo write_local_partition_file(const LocalPartition& lp, const std::string& path) {
  FileWriter w(path);
  w.write(kMagic, sizeof kMagic);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(kPartitionFormatVersion));
  w.pod<std::uint32_t>(kNumSections);
  w.pod<std::int32_t>(lp.rank);
  w.pod<std::int32_t>(lp.num_parts);
  w.pod<std::int64_t>(lp.global_num_nodes);
  w.pod<std::int64_t>(lp.global_num_directed_edges);
  w.pod<std::int32_t>(lp.num_owned);
  w.pod<std::int32_t>(lp.num_halo);
  w.pod<std::int64_t>(lp.features.cols());
  w.pod<std::int32_t>(lp.num_classes);
  w.pod<std::uint32_t>(lp.multilabel ? kFlagMultilabel : 0u);
  w.pod<std::int64_t>(lp.global_train);
  w.pod<std::int64_t>(lp.global_val);
  w.pod<std::int64_t>(lp.global_test);
  w.section("GIDS", lp.global_ids.data(), lp.global_ids.size());
  w.section("DEGR", lp.global_degree.data(), lp.global_degree.size());
  w.section("RPTR", lp.row_ptr.data(), lp.row_ptr.size());
  w.section("COLS", lp.col.data(), lp.col.size());
  write_plan(w, "SPEE", "SROW", lp.send);
  write_plan(w, "RPEE", "RROW", lp.recv);
  w.section("FEAT", lp.features.data(), static_cast<std::size_t>(lp.features.size()));
  w.section("LABL", lp.labels.data(), lp.labels.size());
  w.section("LMAT", lp.label_matrix.data(), lp.label_matrix.size());
  std::vector<std::uint8_t> masks;
  masks.reserve(3 * lp.train_mask.size());
  masks.insert(masks.end(), lp.train_mask.begin(), lp.train_mask.end());
  masks.insert(masks.end(), lp.val_mask.begin(), lp.val_mask.end());
  masks.insert(masks.end(), lp.test_mask.begin(), lp.test_mask.end());
  w.section("MASK", masks.data(), masks.size());
  PartitionFileInfo info = w.finish();
  info.file = fs::path(path).filename().string();
  return info;
}

LocalPartition read_local_partition_file(const std::string& path) {
  return read_rank_file(path, nullptr);
}

Json write_partition_dir(const Dataset& ds, const GlobalGraph& g, const std::vector<Rank>& parts,
                         const PartitionConfig& cfg, const std::string& out_arg,
                         PartitionReport* report_out) {
  GNN_CHECK_CONFIG(cfg.seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "seed ", cfg.seed, " does not fit in a signed 64-bit integer");
  StagedDirectory out(
      out_arg, [](const fs::path& p) { return fs::is_empty(p) || is_partition_dir(p); },
      "partition");
  PartitionReport report;
  Json files = Json::array();
  for_each_local_partition(
      ds, g, parts, cfg.parts,
      [&](LocalPartition&& lp) {
        const std::string name = partition_file_name(lp.rank);
        const PartitionFileInfo info = write_local_partition_file(lp, out.file(name));
        files.push_back({{"rank", lp.rank}, {"file", name}, {"bytes", info.bytes},
                         {"crc32", info.crc32}});
      },
      &report, cfg.order);

  Json dataset = Json::object();
  dataset["name"] = ds.name;
  dataset["fingerprint"] = dataset_fingerprint(ds);
  dataset["num_nodes"] = ds.num_nodes;
  dataset["num_edges"] = report.num_edges;
  dataset["num_features"] = ds.features.cols();
  dataset["num_classes"] = ds.num_classes;
  dataset["multilabel"] = ds.multilabel;

  Json m = Json::object();
  m["format"] = kPartitionFormatName;
  m["version"] = kPartitionFormatVersion;
  m["dataset"] = std::move(dataset);
  m["parts"] = cfg.parts;
  m["method"] = to_string(cfg.method);
  m["objective"] = to_string(cfg.objective);
  m["seed"] = static_cast<std::int64_t>(cfg.seed);
  m["order"] = to_string(cfg.order.kind);
  if (cfg.order.kind == LocalOrder::Kind::blocks) m["order_block_rows"] = cfg.order.block_rows;
  m["edge_cut"] = report.edge_cut;
  m["total_volume"] = report.total_volume;
  m["imbalance"] = report.imbalance;
  m["owned"] = report.owned;
  m["halo"] = report.halo;
  m["boundary"] = report.boundary;
  m["sent_rows"] = report.sent_rows;
  m["local_edges"] = report.local_edges;
  Json pv = Json::array();
  for (const auto& x : report.pair_volume) pv.push_back({x.from, x.to, x.rows});
  m["pair_volume"] = std::move(pv);
  m["files"] = std::move(files);
  // The manifest goes last: a directory without one is recognisably incomplete.
  write_file_atomic(out.file("manifest.json"), dump_json(m, 2) + "\n");
  out.commit();
  if (report_out) *report_out = std::move(report);
  return m;
}

void write_metis_graph(const GlobalGraph& g, const std::string& path) {
  FileWriter w(path);
  std::string line =
      std::to_string(g.num_nodes) + " " + std::to_string(g.num_directed_edges() / 2) + "\n";
  w.write(line.data(), line.size());
  for (GlobalId v = 0; v < g.num_nodes; ++v) {
    line.clear();
    for (EdgeOffset e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      if (e != g.row_ptr[v]) line += ' ';
      line += std::to_string(g.col[e] + 1);
    }
    line += '\n';
    w.write(line.data(), line.size());
  }
  w.finish_text();
}

Json read_partition_manifest(const std::string& dir_arg) {
  const std::string dir = strip_trailing_slashes(dir_arg);
  const std::string path = dir + "/manifest.json";
  if (!fs::exists(path))
    throw InputError(path, "missing (is " + dir + " a halognn-partition output directory?)");
  const Json m = read_json_file(path);
  GNN_CHECK_INPUT(m.is_object(), path, "manifest is not a JSON object");
  GNN_CHECK_INPUT(m.contains("format") && m["format"] == kPartitionFormatName, path,
                  "not a halognn partition manifest (format is not \"", kPartitionFormatName,
                  "\")");
  const std::int64_t version = json_int(m, "version", path);
  GNN_CHECK_INPUT(version == kPartitionFormatVersion, path, "partition format version ", version,
                  ", this build reads version ", kPartitionFormatVersion,
                  "; re-run halognn-partition");
  const std::int64_t parts = json_int(m, "parts", path);
  GNN_CHECK_INPUT(parts >= 1, path, "parts must be at least 1 (got ", parts, ")");
  GNN_CHECK_INPUT(m.contains("files") && m["files"].is_array(), path,
                  "\"files\" must be an array");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(m["files"].size()) == parts, path, "lists ",
                  m["files"].size(), " rank files for ", parts, " parts");
  GNN_CHECK_INPUT(m.contains("dataset"), path, "missing \"dataset\"");
  json_int(m["dataset"], "num_nodes", path + " (dataset)");
  return m;
}

LocalPartition read_local_partition(const std::string& dir_arg, Rank rank, Rank world_size) {
  const std::string dir = strip_trailing_slashes(dir_arg);
  const Json m = read_partition_manifest(dir);
  const std::string mpath = dir + "/manifest.json";
  const std::int64_t parts = m["parts"].get<std::int64_t>();
  GNN_CHECK_INPUT(parts == world_size, mpath, "partition has ", parts, " parts but the job has ",
                  world_size, " ranks; re-run halognn-partition --parts ", world_size);
  GNN_ASSERT(rank >= 0 && rank < world_size, "rank ", rank, " outside [0, ", world_size, ")");
  const Json& entry = m["files"][static_cast<std::size_t>(rank)];
  const std::string where = mpath + " (files[" + std::to_string(rank) + "])";
  const std::int64_t entry_rank = json_int(entry, "rank", where);
  GNN_CHECK_INPUT(entry_rank == rank, mpath, "files[", rank, "] is for rank ", entry_rank);
  const std::string name = json_string(entry, "file", where);
  const std::int64_t bytes = json_int(entry, "bytes", where);
  const std::int64_t crc = json_int(entry, "crc32", where);
  GNN_CHECK_INPUT(!name.empty() && name.find('/') == std::string::npos && name != "." &&
                      name != "..",
                  mpath, "rank file name '", name, "' is not a plain file name");
  const std::string path = dir + "/" + name;
  GNN_CHECK_INPUT(fs::exists(path), path, "missing rank file (listed in ", mpath, ")");
  const std::uint64_t size = file_size_or_throw(path);
  GNN_CHECK_INPUT(size == static_cast<std::uint64_t>(bytes), path, "file is ", size,
                  " bytes but the manifest says ", bytes,
                  " (truncated, or from another partition run)");
  std::uint32_t got_crc = 0;
  LocalPartition lp = read_rank_file(path, &got_crc);
  GNN_CHECK_INPUT(got_crc == static_cast<std::uint32_t>(crc), path, "checksum ", got_crc,
                  " differs from the manifest's ", crc, " (file from another partition run?)");
  GNN_CHECK_INPUT(lp.rank == rank && lp.num_parts == parts, path, "holds rank ", lp.rank, " of ",
                  lp.num_parts, ", expected rank ", rank, " of ", parts);
  const std::int64_t manifest_nodes = m["dataset"]["num_nodes"].get<std::int64_t>();
  GNN_CHECK_INPUT(lp.global_num_nodes == manifest_nodes, path, "graph size ",
                  lp.global_num_nodes, " differs from the manifest's ", manifest_nodes);
  return lp;
}

}  // namespace halognn
