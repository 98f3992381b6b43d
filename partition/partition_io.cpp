// The partition directory: manifest.json and one binary rank file per part.
//
// Rank file layout (little-endian, no padding; docs/partitioning.md has the table):
//   "HGNNPART" | u32 version | u32 section count | fixed header fields
//   sections, each: char[4] tag | u32 element bytes | u64 element count | data
//   u32 CRC32 (zlib) of every preceding byte
#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include <unistd.h>
#include <zlib.h>

#include "core/atomic_output.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "partition/partition_io.hpp"

namespace halognn {

static_assert(std::endian::native == std::endian::little,
              "the partition file format is little-endian; add byte swapping for this host");

namespace fs = std::filesystem;

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

namespace {

constexpr char kMagic[8] = {'H', 'G', 'N', 'N', 'P', 'A', 'R', 'T'};
constexpr std::uint32_t kNumSections = 12;
constexpr std::uint32_t kFlagMultilabel = 1;

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
  // At most 4 MiB at a time, no more than the file needs (a small file gets a small buffer).
  std::vector<unsigned char> buf(static_cast<std::size_t>(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(n, std::uint64_t{1} << 22))));
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

/// a * b for non-negative counts, or an InputError naming `what` when the product does not fit
/// in 62 bits (no section can be that large: the byte count would overflow).
std::int64_t checked_product(std::int64_t a, std::int64_t b, const std::string& path,
                             const char* what) {
  std::int64_t p = 0;
  GNN_CHECK_INPUT(!__builtin_mul_overflow(a, b, &p) && p <= (std::int64_t{1} << 62), path,
                  "header sizes overflow: ", what, " = ", a, " x ", b);
  return p;
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
  GNN_CHECK_INPUT(version == kPartitionFormatVersion || version == 2, path,
                  "partition file format version ", version, ", this build reads versions 2 and ",
                  kPartitionFormatVersion, "; re-run halognn-partition");
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
  // Version 3 added the sparsified-feature sections (empty when the features are dense).
  const std::uint32_t want_sections = version >= 3 ? kNumSections + 2 : kNumSections;
  GNN_CHECK_INPUT(sections == want_sections, path, "has ", sections, " sections, expected ",
                  want_sections);

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
  lp.run_id = r.pod<std::uint64_t>("header");
  const std::int32_t sparse_k = version >= 3 ? r.pod<std::int32_t>("header") : 0;
  GNN_CHECK_INPUT(sparse_k >= 0 && sparse_k <= kSparsifyMaxK, path,
                  "sparsified features: k = ", sparse_k, " (must be in [0, ", kSparsifyMaxK, "])");
  GNN_CHECK_INPUT(sparse_k == 0 || num_features >= 2, path, "sparsified features: ",
                  num_features, " feature column(s), at least 2 needed");
  GNN_CHECK_INPUT(lp.num_owned >= 0 && lp.num_halo >= 0 && num_features >= 0 &&
                      lp.num_classes >= 0,
                  path, "negative count in header");
  const std::int64_t n_local = static_cast<std::int64_t>(lp.num_owned) + lp.num_halo;
  const std::int64_t owned = lp.num_owned;
  // Element counts of the sized sections; a header that passed its checksum may still be forged
  // or written by a broken tool, so no product may wrap around.
  const std::int64_t feat_count =
      sparse_k > 0 ? 0 : checked_product(owned, num_features, path, "owned x features");
  const std::int64_t lmat_count =
      lp.multilabel ? checked_product(owned, lp.num_classes, path, "owned x classes") : 0;

  r.section("GIDS", lp.global_ids, n_local);
  r.section("DEGR", lp.global_degree, n_local);
  r.section("RPTR", lp.row_ptr, owned + 1);
  const std::int64_t nnz = lp.row_ptr.empty() ? 0 : lp.row_ptr.back();
  GNN_CHECK_INPUT(nnz >= 0, path, "negative adjacency size");
  r.section("COLS", lp.col, nnz);
  lp.send = read_plan(r, "SPEE", "SROW", path);
  lp.recv = read_plan(r, "RPEE", "RROW", path);
  const std::size_t nfeat = r.section_count<float>("FEAT", feat_count);
  lp.features = Matrix(owned, sparse_k > 0 ? 0 : num_features);
  r.read(lp.features.data(), nfeat * sizeof(float), "FEAT");
  if (sparse_k > 0) {
    SparseFeatures& sf = lp.sparse_features;
    // Every full chunk has at least 2 codebook floats: a forged feature count must not make the
    // layout (one entry per slot) larger than the codebook the file could hold.
    GNN_CHECK_INPUT(static_cast<std::uint64_t>(num_features / kSparsifyChunk) <= r.left() / 8, path,
                    "header claims ", num_features, " sparsified features, more than the ",
                    r.left(), " bytes left in the file can hold");
    sf.layout = make_sparsify_layout(num_features, sparse_k);
    sf.rows = owned;
    r.section("SPCB", sf.codebook, sf.layout.slots());
    r.section("SPPO", sf.positions, checked_product(owned, sf.layout.slots(), path, "owned x slots"));
    validate_sparse_features(sf, path);
  } else if (version >= 3) {
    std::vector<float> codebook;
    std::vector<std::uint8_t> positions;
    r.section("SPCB", codebook, 0);
    r.section("SPPO", positions, 0);
  }
  r.section("LABL", lp.labels, lp.multilabel ? 0 : owned);
  r.section("LMAT", lp.label_matrix, lmat_count);
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

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// ---- semantic groups files ------------------------------------------------------------------
//   "HGNNGRPS" | u32 version | i32 rank | i32 num_parts | u64 run id | send side | receive side |
//   u32 CRC32
//   side: per-link (peer, groups, members) triplets, group pointers, members, [weights], kinds

constexpr char kGroupsMagic[8] = {'H', 'G', 'N', 'N', 'G', 'R', 'P', 'S'};
constexpr std::uint32_t kGroupsVersion = 1;

void write_group_side(FileWriter& w, const std::vector<LinkGroupRows>& side, bool sending) {
  std::vector<std::int32_t> head, ptr;
  std::vector<LocalId> rows;
  std::vector<float> weights;
  std::vector<std::uint8_t> kinds;
  for (const LinkGroupRows& l : side) {
    head.push_back(l.peer);
    head.push_back(static_cast<std::int32_t>(l.num_groups()));
    head.push_back(static_cast<std::int32_t>(l.rows.size()));
    ptr.insert(ptr.end(), l.ptr.begin(), l.ptr.end());
    rows.insert(rows.end(), l.rows.begin(), l.rows.end());
    weights.insert(weights.end(), l.weights.begin(), l.weights.end());
    kinds.insert(kinds.end(), l.kinds.begin(), l.kinds.end());
  }
  w.section(sending ? "GSHD" : "GRHD", head.data(), head.size());
  w.section(sending ? "GSPT" : "GRPT", ptr.data(), ptr.size());
  w.section(sending ? "GSRO" : "GRRO", rows.data(), rows.size());
  if (sending) w.section("GSWT", weights.data(), weights.size());
  w.section(sending ? "GSKI" : "GRKI", kinds.data(), kinds.size());
}

std::vector<LinkGroupRows> read_group_side(FileReader& r, bool sending, const std::string& path) {
  std::vector<std::int32_t> head, ptr;
  std::vector<LocalId> rows;
  std::vector<float> weights;
  std::vector<std::uint8_t> kinds;
  r.section(sending ? "GSHD" : "GRHD", head, -1);
  GNN_CHECK_INPUT(head.size() % 3 == 0, path, "group header has a length not divisible by 3");
  std::int64_t groups = 0, members = 0;
  for (std::size_t i = 0; i < head.size(); i += 3) {
    GNN_CHECK_INPUT(head[i + 1] >= 0 && head[i + 2] >= 0, path, "negative group counts");
    groups += head[i + 1];
    members += head[i + 2];
  }
  const auto links = static_cast<std::int64_t>(head.size() / 3);
  r.section(sending ? "GSPT" : "GRPT", ptr, groups + links);
  r.section(sending ? "GSRO" : "GRRO", rows, members);
  if (sending) r.section("GSWT", weights, members);
  r.section(sending ? "GSKI" : "GRKI", kinds, groups);
  std::vector<LinkGroupRows> side(static_cast<std::size_t>(links));
  std::int64_t at_ptr = 0, at_rows = 0, at_kind = 0;
  for (std::size_t k = 0; k < side.size(); ++k) {
    LinkGroupRows& l = side[k];
    l.peer = head[3 * k];
    const std::int64_t g = head[3 * k + 1], m = head[3 * k + 2];
    l.ptr.assign(ptr.begin() + at_ptr, ptr.begin() + at_ptr + g + 1);
    l.rows.assign(rows.begin() + at_rows, rows.begin() + at_rows + m);
    if (sending) l.weights.assign(weights.begin() + at_rows, weights.begin() + at_rows + m);
    l.kinds.assign(kinds.begin() + at_kind, kinds.begin() + at_kind + g);
    at_ptr += g + 1;
    at_rows += m;
    at_kind += g;
  }
  return side;
}

std::string groups_file_name(Rank rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "groups-%05d.bin", rank);
  return buf;
}

PartitionFileInfo write_groups_file(const LocalPartition& lp, const std::string& path) {
  FileWriter w(path);
  w.write(kGroupsMagic, sizeof kGroupsMagic);
  w.pod<std::uint32_t>(kGroupsVersion);
  w.pod<std::int32_t>(lp.rank);
  w.pod<std::int32_t>(lp.num_parts);
  w.pod<std::uint64_t>(lp.run_id);
  write_group_side(w, lp.send_groups, true);
  write_group_side(w, lp.recv_groups, false);
  PartitionFileInfo info = w.finish();
  info.file = fs::path(path).filename().string();
  return info;
}

/// Reads rank lp.rank's groups file (checked against the manifest's size and CRC) into lp.
void read_groups_file(const std::string& path, std::uint64_t bytes, std::uint32_t crc,
                      LocalPartition& lp) {
  GNN_CHECK_INPUT(fs::exists(path), path, "missing groups file (listed in the manifest)");
  const std::uint64_t size = file_size_or_throw(path);
  GNN_CHECK_INPUT(size == bytes, path, "file is ", size, " bytes but the manifest says ", bytes,
                  " (truncated, or from another partition run)");
  GNN_CHECK_INPUT(size >= sizeof kGroupsMagic + 20 + 4, path, "truncated groups file");
  const std::uint32_t body_crc = crc_of_prefix(path, size - 4);
  GNN_CHECK_INPUT(body_crc == crc, path, "checksum ", body_crc, " differs from the manifest's ",
                  crc, " (corrupt, or from another partition run)");
  FileReader r(path, size);
  char magic[8];
  r.read(magic, sizeof magic, "magic");
  GNN_CHECK_INPUT(std::memcmp(magic, kGroupsMagic, sizeof magic) == 0, path,
                  "not a halognn groups file (bad magic)");
  const auto version = r.pod<std::uint32_t>("version");
  GNN_CHECK_INPUT(version == kGroupsVersion, path, "groups file version ", version,
                  ", this build reads version ", kGroupsVersion, "; re-run halognn-partition");
  const auto rank = r.pod<std::int32_t>("header");
  const auto parts = r.pod<std::int32_t>("header");
  GNN_CHECK_INPUT(rank == lp.rank && parts == lp.num_parts, path, "holds the groups of rank ",
                  rank, " of ", parts, ", expected rank ", lp.rank, " of ", lp.num_parts);
  const auto run = r.pod<std::uint64_t>("header");
  GNN_CHECK_INPUT(run == lp.run_id, path, "written by partition run ", format_run_id(run),
                  " but its rank file by run ", format_run_id(lp.run_id));
  lp.send_groups = read_group_side(r, true, path);
  lp.recv_groups = read_group_side(r, false, path);
  GNN_CHECK_INPUT(r.left() == 4, path, r.left() - 4, " unexpected bytes after the last section");
  validate_groups(lp, path);
  lp.has_groups = true;
}

}  // namespace

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

std::string partition_file_name(Rank rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "part-%05d.bin", rank);
  return buf;
}

std::uint64_t new_partition_run_id() {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const std::int64_t stamps[3] = {
      std::chrono::system_clock::now().time_since_epoch().count(),
      std::chrono::steady_clock::now().time_since_epoch().count(), static_cast<std::int64_t>(::getpid())};
  h = fnv1a(h, stamps, sizeof stamps);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  h = fnv1a(h, host, std::strlen(host));
  return h;
}

std::string format_run_id(std::uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string dataset_fingerprint(const Dataset& ds) {
  // Hashes the graph, the feature shape and the labels: what decides the partition's content
  // apart from the feature values (hashing those would cost a pass over gigabytes).
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0, nullptr, 0));
  crc = crc_update(crc, ds.edge_src.data(), ds.edge_src.size() * sizeof(GlobalId));
  crc = crc_update(crc, ds.edge_dst.data(), ds.edge_dst.size() * sizeof(GlobalId));
  crc = crc_update(crc, ds.labels.data(), ds.labels.size() * sizeof(std::int32_t));
  crc = crc_update(crc, ds.label_matrix.data(), ds.label_matrix.size());
  // The feature count, not the dense matrix's shape, so that a sparsified copy of a dataset has
  // the fingerprint of its original.
  return dataset_fingerprint(ds.num_nodes, ds.num_features(), ds.num_classes,
                             static_cast<std::int64_t>(ds.edge_src.size()), crc);
}

std::string dataset_fingerprint(GlobalId num_nodes, std::int64_t num_features,
                                std::int32_t num_classes, std::int64_t num_edges,
                                std::uint32_t data_crc) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const std::int64_t shape[4] = {num_nodes, num_nodes, num_features, num_classes};
  h = fnv1a(h, shape, sizeof shape);
  const std::uint64_t counts[2] = {static_cast<std::uint64_t>(num_edges), data_crc};
  h = fnv1a(h, counts, sizeof counts);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

PartitionFileInfo write_local_partition_file(const LocalPartition& lp, const std::string& path) {
  FileWriter w(path);
  w.write(kMagic, sizeof kMagic);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(kPartitionFormatVersion));
  w.pod<std::uint32_t>(kNumSections + 2);
  w.pod<std::int32_t>(lp.rank);
  w.pod<std::int32_t>(lp.num_parts);
  w.pod<std::int64_t>(lp.global_num_nodes);
  w.pod<std::int64_t>(lp.global_num_directed_edges);
  w.pod<std::int32_t>(lp.num_owned);
  w.pod<std::int32_t>(lp.num_halo);
  w.pod<std::int64_t>(lp.num_features());
  w.pod<std::int32_t>(lp.num_classes);
  w.pod<std::uint32_t>(lp.multilabel ? kFlagMultilabel : 0u);
  w.pod<std::int64_t>(lp.global_train);
  w.pod<std::int64_t>(lp.global_val);
  w.pod<std::int64_t>(lp.global_test);
  w.pod<std::uint64_t>(lp.run_id);
  w.pod<std::int32_t>(lp.sparsified() ? lp.sparse_features.layout.k : 0);
  w.section("GIDS", lp.global_ids.data(), lp.global_ids.size());
  w.section("DEGR", lp.global_degree.data(), lp.global_degree.size());
  w.section("RPTR", lp.row_ptr.data(), lp.row_ptr.size());
  w.section("COLS", lp.col.data(), lp.col.size());
  write_plan(w, "SPEE", "SROW", lp.send);
  write_plan(w, "RPEE", "RROW", lp.recv);
  w.section("FEAT", lp.features.data(), static_cast<std::size_t>(lp.features.size()));
  w.section("SPCB", lp.sparse_features.codebook.data(), lp.sparse_features.codebook.size());
  w.section("SPPO", lp.sparse_features.positions.data(), lp.sparse_features.positions.size());
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
                         PartitionReport* report_out, std::vector<std::string>* removed_leftovers) {
  GNN_CHECK_CONFIG(cfg.seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "seed ", cfg.seed, " does not fit in a signed 64-bit integer");
  StagedDirectory out(
      out_arg, [](const fs::path& p) { return fs::is_empty(p) || is_partition_dir(p); },
      "partition");
  if (removed_leftovers) *removed_leftovers = out.removed_leftovers();
  std::vector<LinkGroups> links;
  double grouping_s = 0;
  if (cfg.semantic_groups) {
    const auto t0 = Clock::now();
    links = group_links(g, parts, cfg.parts, cfg.grouping);
    grouping_s = seconds_since(t0);
  }
  PartitionReport report;
  // Sparsified features: encoded once for every node (one codebook for all parts), or taken as
  // they are from a sparsified dataset (no decoding, no re-encoding); each part then stores its
  // owned rows' positions.
  SparseFeatures encoded;
  const SparseFeatures* sparse = nullptr;
  double sparsify_s = 0;
  if (ds.sparsified()) {
    GNN_CHECK_CONFIG(cfg.sparsify_k == 0 || cfg.sparsify_k == ds.sparse_features.layout.k,
                     "--sparsify-features ", cfg.sparsify_k, ": the features of dataset ", ds.name,
                     " are sparsified with k = ", ds.sparse_features.layout.k, " already");
    sparse = &ds.sparse_features;
  } else if (cfg.sparsify_k > 0) {
    GNN_CHECK_CONFIG(cfg.sparsify_sample >= 1, "--sparsify-sample must be at least 1, got ",
                     cfg.sparsify_sample);
    const auto t0 = Clock::now();
    encoded = sparsify_features(ds.features.data(), ds.features.rows(), ds.features.cols(),
                                cfg.sparsify_k, cfg.seed,
                                sparsify_sample_fraction(cfg.sparsify_sample, ds.num_nodes));
    encoded.codebook_sample = cfg.sparsify_sample;
    encoded.codebook_seed = cfg.seed;
    sparsify_s = seconds_since(t0);
    sparse = &encoded;
  }
  Json files = Json::array(), group_files = Json::array();
  const std::uint64_t run_id = new_partition_run_id();
  for_each_local_partition(
      ds, g, parts, cfg.parts,
      [&](LocalPartition&& lp) {
        lp.run_id = run_id;
        report.feature_bytes_dense += lp.num_owned * ds.num_features() *
                                      static_cast<std::int64_t>(sizeof(float));
        if (sparse) {
          SparseFeatures& sf = lp.sparse_features;
          sf.layout = sparse->layout;
          sf.rows = lp.num_owned;
          sf.codebook = sparse->codebook;
          const std::int64_t slots = sparse->layout.slots();
          sf.positions.resize(static_cast<std::size_t>(lp.num_owned * slots));
          for (LocalId i = 0; i < lp.num_owned; ++i)
            std::copy_n(sparse->positions.begin() + lp.global_ids[i] * slots, slots,
                        sf.positions.begin() + static_cast<std::int64_t>(i) * slots);
          lp.features = Matrix(lp.num_owned, 0);
          report.feature_bytes_stored += sf.bytes();
        } else {
          report.feature_bytes_stored += lp.features.size() * static_cast<std::int64_t>(sizeof(float));
        }
        const std::string name = partition_file_name(lp.rank);
        const PartitionFileInfo info = write_local_partition_file(lp, out.file(name));
        files.push_back({{"rank", lp.rank}, {"file", name}, {"bytes", info.bytes},
                         {"crc32", info.crc32}});
        if (!cfg.semantic_groups) return;
        attach_groups(lp, links);
        const std::string gname = groups_file_name(lp.rank);
        const PartitionFileInfo ginfo = write_groups_file(lp, out.file(gname));
        group_files.push_back({{"rank", lp.rank}, {"file", gname}, {"bytes", ginfo.bytes},
                               {"crc32", ginfo.crc32}});
      },
      &report, cfg.order);
  report.grouping_seconds = grouping_s;
  for (const LinkGroups& l : links) report.group_links.push_back(l.to_json());

  Json dataset = Json::object();
  dataset["name"] = ds.name;
  dataset["fingerprint"] = dataset_fingerprint(ds);
  dataset["num_nodes"] = ds.num_nodes;
  dataset["num_edges"] = report.num_edges;
  dataset["num_features"] = ds.num_features();
  dataset["num_classes"] = ds.num_classes;
  dataset["multilabel"] = ds.multilabel;

  Json m = Json::object();
  m["format"] = kPartitionFormatName;
  m["version"] = kPartitionFormatVersion;
  m["run_id"] = format_run_id(run_id);
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
  if (sparse) {
    Json f = Json::object();
    f["sparsify_k"] = sparse->layout.k;
    f["slots_per_row"] = sparse->layout.slots();
    f["ratio"] = sparse->layout.ratio();
    f["codebook_sample"] = sparse->codebook_sample;
    f["codebook_seed"] = static_cast<std::int64_t>(sparse->codebook_seed);
    f["codebook_rows"] = sparse->codebook_rows;
    // "partition": encoded by this run; "dataset": copied from a sparsified dataset.
    f["encoded_by"] = ds.sparsified() ? "dataset" : "partition";
    f["seconds"] = sparsify_s;
    m["features"] = std::move(f);
  }
  m["feature_bytes_dense"] = report.feature_bytes_dense;
  m["feature_bytes_stored"] = report.feature_bytes_stored;
  if (cfg.semantic_groups) {
    Json gr = Json::object();
    gr["method"] = "semantic";
    gr["groups_per_link"] = cfg.grouping.groups_per_link;
    gr["drop_o2o"] = cfg.grouping.drop_o2o;
    gr["seed"] = static_cast<std::int64_t>(cfg.grouping.seed);
    gr["seconds"] = grouping_s;
    gr["files"] = std::move(group_files);
    gr["links"] = report.group_links;
    m["groups"] = std::move(gr);
  }
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

namespace {

/// The run id from its manifest form (16 hex digits).
std::uint64_t parse_run_id(const std::string& text, const std::string& path) {
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id, 16);
  GNN_CHECK_INPUT(text.size() == 16 && ec == std::errc() && end == text.data() + text.size(), path,
                  "\"run_id\" must be 16 hex digits (got \"", text, "\")");
  return id;
}

}  // namespace

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
  GNN_CHECK_INPUT(version == kPartitionFormatVersion || version == 2, path,
                  "partition format version ", version, ", this build reads versions 2 and ",
                  kPartitionFormatVersion, "; re-run halognn-partition");
  const std::int64_t parts = json_int(m, "parts", path);
  GNN_CHECK_INPUT(parts >= 1, path, "parts must be at least 1 (got ", parts, ")");
  GNN_CHECK_INPUT(m.contains("files") && m["files"].is_array(), path,
                  "\"files\" must be an array");
  GNN_CHECK_INPUT(static_cast<std::int64_t>(m["files"].size()) == parts, path, "lists ",
                  m["files"].size(), " rank files for ", parts, " parts");
  parse_run_id(json_string(m, "run_id", path), path);
  GNN_CHECK_INPUT(m.contains("dataset"), path, "missing \"dataset\"");
  const std::string ds = path + " (dataset)";
  const std::int64_t nodes = json_int(m["dataset"], "num_nodes", ds);
  const std::int64_t features = json_int(m["dataset"], "num_features", ds);
  const std::int64_t classes = json_int(m["dataset"], "num_classes", ds);
  GNN_CHECK_INPUT(nodes >= 0 && features >= 0 && classes >= 0, path,
                  "negative dataset size (num_nodes ", nodes, ", num_features ", features,
                  ", num_classes ", classes, ")");
  GNN_CHECK_INPUT(classes <= std::numeric_limits<std::int32_t>::max(), path, "num_classes ",
                  classes, " does not fit the rank files' 32-bit class count");
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
  const std::uint64_t manifest_run = parse_run_id(m["run_id"].get<std::string>(), mpath);
  GNN_CHECK_INPUT(lp.run_id == manifest_run, path, "written by partition run ",
                  format_run_id(lp.run_id), " but ", mpath, " is from run ",
                  format_run_id(manifest_run),
                  " (files of two halognn-partition runs mixed up; re-run halognn-partition)");
  const Json& dsm = m["dataset"];
  const std::int64_t manifest_nodes = dsm["num_nodes"].get<std::int64_t>();
  GNN_CHECK_INPUT(lp.global_num_nodes == manifest_nodes, path, "graph size ",
                  lp.global_num_nodes, " differs from the manifest's ", manifest_nodes);
  const std::int64_t manifest_features = dsm["num_features"].get<std::int64_t>();
  GNN_CHECK_INPUT(lp.num_features() == manifest_features, path, "has ", lp.num_features(),
                  " features per node but the manifest says ", manifest_features);
  const std::int64_t manifest_k =
      m.contains("features") && m["features"].is_object()
          ? json_int(m["features"], "sparsify_k", mpath)
          : 0;
  const std::int64_t file_k = lp.sparsified() ? lp.sparse_features.layout.k : 0;
  GNN_CHECK_INPUT(file_k == manifest_k, path, "holds features sparsified with k = ", file_k,
                  " but the manifest says k = ", manifest_k);
  const std::int64_t manifest_classes = dsm["num_classes"].get<std::int64_t>();
  GNN_CHECK_INPUT(lp.num_classes == manifest_classes, path, "has ", lp.num_classes,
                  " classes but the manifest says ", manifest_classes);
  if (m.contains("groups")) {
    const Json& gr = m["groups"];
    GNN_CHECK_INPUT(gr.is_object() && gr.contains("files") && gr["files"].is_array() &&
                        static_cast<std::int64_t>(gr["files"].size()) == parts,
                    mpath, "\"groups\" must list one groups file per part");
    const Json& gentry = gr["files"][static_cast<std::size_t>(rank)];
    const std::string gwhere = mpath + " (groups.files[" + std::to_string(rank) + "])";
    GNN_CHECK_INPUT(json_int(gentry, "rank", gwhere) == rank, mpath, "groups.files[", rank,
                    "] is for another rank");
    const std::string gname = json_string(gentry, "file", gwhere);
    GNN_CHECK_INPUT(!gname.empty() && gname.find('/') == std::string::npos && gname != "." &&
                        gname != "..",
                    mpath, "groups file name '", gname, "' is not a plain file name");
    read_groups_file(dir + "/" + gname, static_cast<std::uint64_t>(json_int(gentry, "bytes", gwhere)),
                     static_cast<std::uint32_t>(json_int(gentry, "crc32", gwhere)), lp);
  }
  return lp;
}

}  // namespace halognn
